-- Statements of the orders package, loaded by name (internal/namedsql).

-- name: InsertOrder :one
-- The order row of CreateOrder; its OrderCreated event is enqueued in the
-- same transaction. The benchmark's order-only transaction runs this same
-- statement.
INSERT INTO orders (id, customer_email, currency, payment_method, amount, items, created_event_id)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING status;

-- name: LockOrderForCancel :one
-- Row-locks the order until the cancelling transaction ends, so concurrent
-- cancels serialise and only the first writes an event. Deliberately no join
-- to the cancel event here: a cancel that waited for the lock gets the
-- order's new version re-checked, but a joined row would still come from
-- the statement's old snapshot, which predates the first cancel's event.
-- cancel_event_sequence is on the order row itself, so a repeated cancel
-- answers even after retention cleanup deleted the cancel event.
SELECT created_event_id, cancel_event_id, cancel_event_sequence
FROM orders
WHERE id = $1
FOR UPDATE;

-- name: GetEventSequence :one
-- Only for orders cancelled before cancel_event_sequence existed (and not
-- backfilled because their event was already gone). A new statement, so a
-- new snapshot under READ COMMITTED: it sees the event the first cancel
-- committed while this one waited for the lock.
SELECT aggregate_sequence
FROM outbox_events
WHERE event_id = $1;

-- name: MarkOrderCancelled :exec
-- Records the cancel request. The status becomes 'cancelled' only when the
-- cancel saga has stopped or refunded the payment (net charge zero), so a
-- client reading 'cancelled' can rely on it.
UPDATE orders
SET cancel_event_id = $2, cancel_event_sequence = $3, updated_at = now()
WHERE id = $1;

-- name: GetOrder :one
SELECT id, customer_email, currency, payment_method, amount, items, status,
       payment_intent_id, refund_id, created_event_id, cancel_event_id,
       shipping_address, created_at, updated_at
FROM orders
WHERE id = $1;

-- name: ListOrderEvents :many
-- Served by the unique (aggregate_type, aggregate_id, aggregate_sequence) index.
SELECT event_id, event_type, aggregate_sequence, occurred_at, published_at
FROM outbox_events
WHERE aggregate_type = $1 AND aggregate_id = $2
ORDER BY aggregate_sequence;

-- name: GetIdempotencyKey :one
SELECT request_fingerprint, response_status, response_body
FROM idempotency_keys
WHERE key = $1;

-- name: InsertIdempotencyKey :one
-- ON CONFLICT DO NOTHING waits for a concurrent transaction that inserted
-- the same key: if it commits, no row is returned and the caller rolls its
-- own order back and replays the stored response; if it aborts, this insert
-- goes ahead.
INSERT INTO idempotency_keys (key, request_fingerprint, response_status, response_body, order_id)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (key) DO NOTHING
RETURNING key;

-- name: SetCreatedSequence :exec
-- Only when the OrderCreated event did not get sequence 1, the column's
-- default (see createOrderTx): the order row must name its event's place in
-- the stream without outbox_events, whose rows retention cleanup deletes.
UPDATE orders
SET created_sequence = $2
WHERE id = $1;

-- name: SettleSkipped :execrows
-- Records a skipped sequence and counts it, with every skipped sequence that
-- directly follows, as applied (orders_settled_through, migration 00007).
-- Every expression reads only the row being updated: behind a concurrent
-- projection step (which holds the row lock until it commits) PostgreSQL
-- evaluates them again on the committed row, so neither change is lost.
UPDATE orders
SET skipped_sequences = ARRAY(SELECT DISTINCT s FROM unnest(skipped_sequences || $2::bigint) AS s ORDER BY s),
    applied_sequence  = orders_settled_through(applied_sequence, skipped_sequences || $2::bigint),
    updated_at        = now()
WHERE id = $1;

-- name: GetOrderState :one
-- What the workflows ask before any charge: the order's own columns only,
-- no event rows, so the answer does not depend on retention cleanup.
SELECT status, cancel_event_id IS NOT NULL, COALESCE(payment_intent_id, ''), COALESCE(refund_id, ''), applied_sequence
FROM orders
WHERE id = $1;
