-- Statements of the time-edge tests (time_edges_test.go): they age an order
-- by moving its timestamps, and lose or repeat a relay's mark, the way days
-- passing and a relay's ACK gap would.

-- name: AgeOrder :exec
-- Moves order @id and its events @age into the past.
UPDATE orders SET created_at = created_at - @age::interval, updated_at = updated_at - @age::interval WHERE id = @id;

-- name: AgeEvents :exec
UPDATE outbox_events
SET occurred_at  = occurred_at - @age::interval,
    available_at = available_at - @age::interval,
    published_at = published_at - @age::interval
WHERE aggregate_type = 'order' AND aggregate_id = @id::text;

-- name: LoseMark :exec
-- The relay's mark of event @event_id never happened (its ACK gap lasted longer
-- than the namespace retention): it is unpublished again, not a replay.
UPDATE outbox_events
SET published_at = NULL, claimed_by = NULL, claim_until = NULL, available_at = now(), attempt_count = 0
WHERE event_id = @event_id;

-- name: ForceReplay :exec
-- A replay of event @event_id requested before the replay horizon passed, still
-- queued when the relay sees it.
UPDATE outbox_events
SET published_at = NULL, claimed_by = NULL, claim_until = NULL, available_at = now(), attempt_count = 0,
    replay_requested_at = now()
WHERE event_id = @event_id;

-- name: Notify :exec
SELECT pg_notify('outbox_events', '');

-- name: EventPublished :one
SELECT published_at IS NOT NULL AND replay_requested_at IS NULL FROM outbox_events WHERE event_id = @event_id;

-- name: OrderEventCount :one
SELECT count(*) FROM outbox_events WHERE aggregate_type = 'order' AND aggregate_id = @order_id::text;

-- name: CancelEventOf :one
-- The order's cancel event (the newest OrderCancelled of the order).
SELECT event_id::text FROM outbox_events
WHERE aggregate_type = 'order' AND aggregate_id = @order_id::text AND event_type = 'OrderCancelled'
ORDER BY aggregate_sequence DESC
LIMIT 1;
