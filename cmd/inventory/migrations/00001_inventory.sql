-- The inventory service's own tables, beside the outbox's (outbox.Migrate).
-- Versions are recorded in inventory_schema_version, never in goose's
-- default table.

-- +goose Up

-- inventory_stock: what can still be reserved of each SKU. available is
-- what is on hand and not held by a reservation; reserved is what
-- reservations hold.
CREATE TABLE inventory_stock (
    sku        text        PRIMARY KEY CHECK (sku <> ''),
    available  bigint      NOT NULL CHECK (available >= 0),
    reserved   bigint      NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- inventory_reservations: one row per order that holds stock ('reserved')
-- or whose reservation was released ('released': also the tombstone a
-- release leaves for an order it found nothing for, so that a reserve
-- arriving after the saga gave up reserves nothing). A rejected reserve
-- writes no row.
CREATE TABLE inventory_reservations (
    order_id    text        PRIMARY KEY CHECK (order_id <> ''),
    workflow_id text        NOT NULL,
    status      text        NOT NULL CHECK (status IN ('reserved', 'released')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    released_at timestamptz
);

-- inventory_reservation_items: what a reservation holds, by SKU.
CREATE TABLE inventory_reservation_items (
    order_id text   NOT NULL REFERENCES inventory_reservations (order_id),
    sku      text   NOT NULL REFERENCES inventory_stock (sku),
    quantity bigint NOT NULL CHECK (quantity > 0),
    PRIMARY KEY (order_id, sku)
);

-- inventory_requests: the answer stored for each Idempotency-Key, with a
-- hash of the request it answered, so that a retry with the key replays the
-- answer and a different request under the key is refused. Its row commits
-- with the change, the inbox row and the outbox event.
CREATE TABLE inventory_requests (
    idempotency_key text        PRIMARY KEY,
    request_hash    bytea       NOT NULL,
    status_code     int         NOT NULL,
    response        json        NOT NULL, -- json, not jsonb: replayed byte for byte
    event_id        uuid,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE inventory_requests;
DROP TABLE inventory_reservation_items;
DROP TABLE inventory_reservations;
DROP TABLE inventory_stock;
