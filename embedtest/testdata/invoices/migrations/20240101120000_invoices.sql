-- +goose Up
CREATE TABLE invoices (
    id           text PRIMARY KEY,
    customer     text        NOT NULL,
    amount_cents bigint      NOT NULL CHECK (amount_cents > 0),
    issued_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE invoices;
