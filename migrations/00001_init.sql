-- The order app's schema (package migrations; version table
-- outflow_orders_schema_version). Its migrations keep the numbers of
-- outflow's single migration sequence they were cut from; this one is the
-- order app's half of that sequence's 00001 (the outbox's half,
-- outbox_sequences, outbox_events and processed_events, is
-- outbox/migrations/00001_init.sql and runs first). A new migration takes
-- the next number after the highest of both sets.
--
-- orders and idempotency_keys are written only by package orders, in the
-- order's own transactions.

-- +goose Up

-- orders: the business rows of the order service. An order's events carry
-- aggregate_type = 'order' and aggregate_id = id::text.
CREATE TABLE orders (
    id                 uuid PRIMARY KEY,
    customer_email     text        NOT NULL,
    currency           text        NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    payment_method     text        NOT NULL,
    amount             bigint      NOT NULL CHECK (amount > 0),
    items              jsonb       NOT NULL,
    status             text        NOT NULL DEFAULT 'pending'
                       CHECK (status IN ('pending', 'paid', 'confirmed', 'payment_failed', 'cancelled')),
    -- The projection's position in the order's event stream: the highest
    -- aggregate_sequence whose effect has been applied (see processed_events).
    applied_sequence   bigint      NOT NULL DEFAULT 0,
    payment_intent_id  text,
    refund_id          text,
    -- Set once by the first cancel; a repeated cancel returns this event.
    cancel_event_id    uuid,
    created_event_id   uuid        NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);

-- idempotency_keys: request idempotency for POST /orders, written in the
-- order's own transaction.
CREATE TABLE idempotency_keys (
    key                 text        PRIMARY KEY,
    request_fingerprint bytea       NOT NULL,
    response_status     integer     NOT NULL,
    response_body       jsonb       NOT NULL,
    order_id            uuid        NOT NULL REFERENCES orders (id),
    created_at          timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE orders;
