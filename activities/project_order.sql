-- Queries of the order projection (project_order.go). Every statement runs in
-- the one transaction that also writes the inbox row.

-- name: InboxInsert
-- The inbox: a row returned means this (consumer, event) is new.
INSERT INTO processed_events (consumer_name, event_id)
VALUES ($1, $2)
ON CONFLICT DO NOTHING
RETURNING event_id;

-- name: EventSequence
-- The sequence of an event, for callers that only know its id (the cancel
-- workflow closing the stream of a saga that ended without a result).
SELECT aggregate_sequence FROM outbox_events WHERE event_id = $1;

-- name: OrderLock
-- Serialises every projection of one order.
SELECT status, applied_sequence, customer_email
FROM orders
WHERE id = $1
FOR UPDATE;

-- name: OrderApply
-- $5 is the event's sequence on its final step, 0 otherwise; GREATEST keeps
-- applied_sequence monotonic.
UPDATE orders
SET status            = $2,
    payment_intent_id = COALESCE($3, payment_intent_id),
    refund_id         = COALESCE($4, refund_id),
    applied_sequence  = GREATEST(applied_sequence, $5),
    updated_at        = now()
WHERE id = $1;
