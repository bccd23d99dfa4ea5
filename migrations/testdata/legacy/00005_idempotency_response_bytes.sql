-- +goose Up
-- A replayed POST /orders must return the first response byte for byte: a
-- client may compare, hash or sign it. jsonb normalises key order and
-- whitespace; json keeps the text exactly as stored.
ALTER TABLE idempotency_keys ALTER COLUMN response_body TYPE json USING response_body::json;

-- +goose Down
ALTER TABLE idempotency_keys ALTER COLUMN response_body TYPE jsonb USING response_body::jsonb;
