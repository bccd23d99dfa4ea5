-- The order app's half of outflow's migration 00002 (operations, issue 7):
-- the cancel's sequence on the order, written by package orders. The
-- outbox's half (the replay mark, the cleanup horizon) is
-- outbox/migrations/00002_operations.sql. The backfill reads outbox_events,
-- which the outbox's schema, migrated first, holds.

-- +goose Up

-- A repeated POST /orders/{id}/cancel answers with the first cancel's
-- sequence; keeping it on the order means the answer survives retention
-- cleanup of the event row.
ALTER TABLE orders ADD COLUMN cancel_event_sequence bigint;

UPDATE orders o
SET cancel_event_sequence = e.aggregate_sequence
FROM outbox_events e
WHERE e.event_id = o.cancel_event_id
  AND o.cancel_event_sequence IS NULL;

-- +goose Down
ALTER TABLE orders DROP COLUMN cancel_event_sequence;
