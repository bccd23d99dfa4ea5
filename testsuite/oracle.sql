-- What the chaos soak's operator and oracle read (operator.go, oracle.go).
-- Read-only, but for the poison events the soak enqueues through the outbox
-- API itself (poison.go).

-- name: ReplayFlagged :many
-- The events a replay command just flagged: replay requested at or after the
-- command started, in its window (and of its aggregate, when it named one).
SELECT event_id::text, aggregate_id, aggregate_sequence, replay_requested_at
FROM outbox_events
WHERE replay_requested_at >= @since
  AND occurred_at >= @from AND occurred_at < @to
  AND (@aggregate::text = '' OR (aggregate_type = 'order' AND aggregate_id = @aggregate::text));

-- name: ReplayProgress :many
-- Where the watched replays stand: a mark clears replay_requested_at and
-- sets published_at.
SELECT event_id::text, replay_requested_at, published_at
FROM outbox_events
WHERE event_id = ANY(@ids::uuid[]);

-- name: LateCancelCandidate :many
-- A recently confirmed order of the default buyer, not cancelled, whose
-- OrderCreated is published: the operator replays it and the buyer cancels
-- it at once (a new event behind a replayed one).
SELECT o.id::text, e.occurred_at
FROM orders o
JOIN outbox_events e ON e.aggregate_type = 'order' AND e.aggregate_id = o.id::text AND e.aggregate_sequence = 1
WHERE o.status = 'confirmed' AND o.cancel_event_id IS NULL
  AND o.customer_email = 'buyer@example.com'
  AND e.published_at IS NOT NULL AND e.replay_requested_at IS NULL
  AND e.occurred_at > now() - interval '20 seconds'
ORDER BY random()
LIMIT 1;

-- name: UnsettledPoison :one
-- Poison events not skipped yet (none is ever published).
SELECT count(*) FROM outbox_events WHERE aggregate_type = @aggregate_type AND skipped_at IS NULL;

-- name: StillFlagged :many
-- Replayed events that are still flagged after the drain: published (or not)
-- but the replay never marked, so it was never delivered.
SELECT event_id::text, aggregate_type || '/' || aggregate_id, aggregate_sequence,
       published_at IS NOT NULL AS published, replay_requested_at
FROM outbox_events
WHERE replay_requested_at IS NOT NULL
ORDER BY event_id;

-- name: OracleEvents :many
-- Every event but those an operator skipped, with its order's customer.
SELECT e.event_id::text, e.aggregate_type, e.aggregate_id, e.aggregate_sequence, e.event_type, e.occurred_at,
       coalesce(lower(btrim(o.customer_email)), '')
FROM outbox_events e
LEFT JOIN orders o ON e.aggregate_type = 'order' AND e.aggregate_id = o.id::text
WHERE e.skipped_at IS NULL
ORDER BY e.aggregate_type, e.aggregate_id, e.aggregate_sequence;

-- name: Erasures :many
-- Every forget-customer the database accepted (the audit is the truth, also
-- when the CLI lost its connection before it could answer).
SELECT subject_hash, coalesce(key_id::text, ''), erased_at FROM customer_key_erasures ORDER BY id;

-- name: Unfinished :many
-- The orders a drain is still waiting for, with their events.
SELECT o.id::text, o.status, lower(btrim(o.customer_email)), o.cancel_event_id IS NOT NULL, o.created_at,
       coalesce(array_agg(e.event_id::text ORDER BY e.aggregate_sequence) FILTER (WHERE e.event_id IS NOT NULL), '{}')
FROM orders o
LEFT JOIN outbox_events e ON e.aggregate_type = 'order' AND e.aggregate_id = o.id::text
WHERE o.status NOT IN ('confirmed', 'payment_failed', 'cancelled')
   OR (o.cancel_event_id IS NOT NULL AND o.status <> 'cancelled')
GROUP BY o.id
ORDER BY o.id;

-- name: UnpublishedEvents :many
-- Unpublished, unskipped events, for the drain's diagnosis.
SELECT event_id::text, aggregate_type || '/' || aggregate_id, aggregate_sequence, event_type,
       attempt_count, quarantined_at IS NOT NULL, coalesce(last_error, '')
FROM outbox_events
WHERE published_at IS NULL AND skipped_at IS NULL
ORDER BY occurred_at
LIMIT 20;

-- name: PoisonExists :one
SELECT EXISTS (SELECT 1 FROM outbox_events WHERE aggregate_type = $1 AND aggregate_id = $2);

-- name: CustomerUnsettled :one
-- The customer's orders that are not settled, as the order table says (what
-- forget-customer's refusal tells the operator to wait for).
SELECT count(*)
FROM orders
WHERE lower(btrim(customer_email)) = $1
  AND (status NOT IN ('confirmed', 'payment_failed', 'cancelled')
       OR (cancel_event_id IS NOT NULL AND status <> 'cancelled'));

-- name: OrderMarks :many
-- Every order event of the orders of the given events, with its mark.
SELECT e.aggregate_id, e.event_id::text, e.aggregate_sequence, e.published_at
FROM outbox_events e
WHERE e.aggregate_type = 'order'
  AND e.aggregate_id IN (SELECT aggregate_id FROM outbox_events WHERE event_id = ANY(@ids::uuid[]) AND aggregate_type = 'order');
