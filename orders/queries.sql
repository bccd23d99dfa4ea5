-- Statements of the orders package, loaded by name (outbox/namedsql) with
-- the package's other .sql files (sql.go), where each is bound to the Go
-- struct of its named arguments (@name) and of its result row. Only this package's
-- .sql files write the orders table, and outbox_events is read only through
-- package outbox (outbox.EventSequence, outbox.AggregateEvents):
-- TestTableOwnership.

-- name: InsertOrder :one
-- The order row of CreateOrder; its OrderCreated event is enqueued in the
-- same transaction. The benchmarks' order-only transaction runs this same
-- statement (orders.SQL) with the same named arguments.
INSERT INTO orders (id, customer_email, currency, payment_method, amount, items, created_event_id)
VALUES (@id, @customer_email, @currency, @payment_method, @amount, @items, @created_event_id)
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
WHERE id = @id
FOR UPDATE;

-- name: MarkOrderCancelled :exec
-- Records the cancel request. The status becomes 'cancelled' only when the
-- cancel saga has stopped or refunded the payment (net charge zero), so a
-- client reading 'cancelled' can rely on it.
UPDATE orders
SET cancel_event_id = @cancel_event_id, cancel_event_sequence = @cancel_event_sequence, updated_at = now()
WHERE id = @id;

-- name: GetOrder :one
SELECT id, customer_email, currency, payment_method, amount, items, status,
       payment_intent_id, refund_id, disputed_at, dispute_id, refund_failed_at,
       created_event_id, cancel_event_id, shipping_address, created_at, updated_at
FROM orders
WHERE id = @id;

-- name: GetIdempotencyKey :one
SELECT request_fingerprint, response_status, response_body
FROM idempotency_keys
WHERE key = @key;

-- name: InsertIdempotencyKey :one
-- ON CONFLICT DO NOTHING waits for a concurrent transaction that inserted
-- the same key: if it commits, no row is returned and the caller rolls its
-- own order back and replays the stored response; if it aborts, this insert
-- goes ahead.
INSERT INTO idempotency_keys (key, request_fingerprint, response_status, response_body, order_id)
VALUES (@key, @request_fingerprint, @response_status, @response_body, @order_id)
ON CONFLICT (key) DO NOTHING
RETURNING key;

-- name: SetCreatedSequence :exec
-- Only when the OrderCreated event did not get sequence 1, the column's
-- default (see createOrderTx): the order row must name its event's place in
-- the stream without outbox_events, whose rows retention cleanup deletes.
UPDATE orders
SET created_sequence = @created_sequence
WHERE id = @id;

-- name: SettleSkipped :execrows
-- Records a skipped sequence and counts it, with every skipped sequence that
-- directly follows, as applied (orders_settled_through, migration 00007).
-- Every expression reads only the row being updated: behind a concurrent
-- projection step (which holds the row lock until it commits) PostgreSQL
-- evaluates them again on the committed row, so neither change is lost.
UPDATE orders
SET skipped_sequences = ARRAY(SELECT DISTINCT s FROM unnest(skipped_sequences || @sequence::bigint) AS s ORDER BY s),
    applied_sequence  = orders_settled_through(applied_sequence, skipped_sequences || @sequence::bigint),
    updated_at        = now()
WHERE id = @id;

-- name: GetOrderState :one
-- What the workflows ask before any charge: the order's own columns only,
-- no event rows, so the answer does not depend on retention cleanup.
SELECT status,
       cancel_event_id IS NOT NULL    AS cancel_requested,
       COALESCE(payment_intent_id, '') AS payment_intent_id,
       COALESCE(refund_id, '')         AS refund_id,
       applied_sequence
FROM orders
WHERE id = @id;

-- name: WebhookOrder :one
-- The order a Stripe webhook is about: by the order id its object's
-- metadata carries (every PaymentIntent and refund the saga creates has
-- one), else by the PaymentIntent the saga recorded on the order (a charge
-- or a dispute names only its PaymentIntent). created_event_id is the
-- payment saga's workflow id.
SELECT id, created_event_id
FROM orders
WHERE id = @order_id OR (@payment_intent_id::text <> '' AND payment_intent_id = @payment_intent_id)
ORDER BY (id = @order_id) IS TRUE DESC
LIMIT 1;
