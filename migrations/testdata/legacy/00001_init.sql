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

-- outbox_sequences hands out per-aggregate sequence numbers. The upsert that
-- bumps last_sequence row-locks the aggregate until the enqueuing transaction
-- ends, so two transactions on one aggregate get consecutive, gap-free numbers
-- in commit order, never from a clock.
CREATE TABLE outbox_sequences (
    aggregate_type text   NOT NULL,
    aggregate_id   text   NOT NULL,
    last_sequence  bigint NOT NULL,
    PRIMARY KEY (aggregate_type, aggregate_id)
);

-- outbox_events: the seed's schema, plus the columns quarantine and operator
-- skips need. Rows are immutable except for the relay's bookkeeping columns.
CREATE TABLE outbox_events (
    event_id           uuid PRIMARY KEY,
    aggregate_type     text        NOT NULL,
    aggregate_id       text        NOT NULL,
    aggregate_sequence bigint      NOT NULL CHECK (aggregate_sequence > 0),
    event_type         text        NOT NULL,
    schema_version     integer     NOT NULL CHECK (schema_version > 0),
    payload            jsonb       NOT NULL,
    occurred_at        timestamptz NOT NULL DEFAULT now(),
    available_at       timestamptz NOT NULL DEFAULT now(),
    claimed_by         text,
    claim_until        timestamptz,
    published_at       timestamptz,
    attempt_count      integer     NOT NULL DEFAULT 0,
    last_error         text,
    quarantined_at     timestamptz,
    skipped_at         timestamptz,
    skipped_by         text,
    skip_reason        text,
    UNIQUE (aggregate_type, aggregate_id, aggregate_sequence)
);

-- The seed's dispatch index: only unpublished rows, so the claim's cost
-- follows the backlog, not the table's history.
CREATE INDEX outbox_dispatch_idx
    ON outbox_events (available_at, occurred_at)
    WHERE published_at IS NULL;

-- The lane check ("is there an unpublished predecessor?") also stays on
-- unpublished rows only.
CREATE INDEX outbox_pending_lane_idx
    ON outbox_events (aggregate_type, aggregate_id, aggregate_sequence)
    WHERE published_at IS NULL;

-- Retention cleanup walks published rows oldest first.
CREATE INDEX outbox_published_idx
    ON outbox_events (published_at)
    WHERE published_at IS NOT NULL;

-- processed_events: the inbox of every consumer whose effect lives in this
-- database. The effect and this row commit in one transaction.
CREATE TABLE processed_events (
    consumer_name text        NOT NULL,
    event_id      uuid        NOT NULL,
    processed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_name, event_id)
);

CREATE INDEX processed_events_processed_at_idx ON processed_events (processed_at);

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
DROP TABLE processed_events;
DROP TABLE outbox_events;
DROP TABLE outbox_sequences;
DROP TABLE orders;
