-- +goose Up
CREATE TABLE ledger_entries (
    id           bigserial PRIMARY KEY,
    invoice_id   text        NOT NULL REFERENCES invoices (id),
    amount_cents bigint      NOT NULL,
    posted_at    timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE ledger_entries;
