-- Statements of the time-edge tests (time_edges_test.go): they age an order
-- by moving its timestamps, and lose or repeat a relay's mark, the way days
-- passing and a relay's ACK gap would.

-- name: AgeOrder :exec
-- Moves order $1 and its events $2 into the past.
UPDATE orders SET created_at = created_at - $2::interval, updated_at = updated_at - $2::interval WHERE id = $1;

-- name: AgeEvents :exec
UPDATE outbox_events
SET occurred_at  = occurred_at - $2::interval,
    available_at = available_at - $2::interval,
    published_at = published_at - $2::interval
WHERE aggregate_type = 'order' AND aggregate_id = $1::text;

-- name: LoseMark :exec
-- The relay's mark of event $1 never happened (its ACK gap lasted longer
-- than the namespace retention): it is unpublished again, not a replay.
UPDATE outbox_events
SET published_at = NULL, claimed_by = NULL, claim_until = NULL, available_at = now(), attempt_count = 0
WHERE event_id = $1;

-- name: ForceReplay :exec
-- A replay of event $1 requested before the replay horizon passed, still
-- queued when the relay sees it.
UPDATE outbox_events
SET published_at = NULL, claimed_by = NULL, claim_until = NULL, available_at = now(), attempt_count = 0,
    replay_requested_at = now()
WHERE event_id = $1;

-- name: Notify :exec
SELECT pg_notify('outbox_events', '');

-- name: EventPublished :one
SELECT published_at IS NOT NULL AND replay_requested_at IS NULL FROM outbox_events WHERE event_id = $1;

-- name: OrderEventCount :one
SELECT count(*) FROM outbox_events WHERE aggregate_type = 'order' AND aggregate_id = $1::text;

-- name: CancelEventOf :one
-- The order's cancel event (the newest OrderCancelled of the order).
SELECT event_id::text FROM outbox_events
WHERE aggregate_type = 'order' AND aggregate_id = $1::text AND event_type = 'OrderCancelled'
ORDER BY aggregate_sequence DESC
LIMIT 1;
