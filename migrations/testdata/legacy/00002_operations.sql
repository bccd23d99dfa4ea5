-- +goose Up

-- Operations (issue 7): replay, retention cleanup, and a repeated cancel that
-- survives cleanup.

-- replay_requested_at marks an event an operator replayed (outboxctl replay):
-- it is unpublished again, and the publisher may start a new workflow run for
-- it if the first run failed (ALLOW_DUPLICATE_FAILED_ONLY); a normal publish
-- rejects any duplicate. The relay's mark clears it.
ALTER TABLE outbox_events ADD COLUMN replay_requested_at timestamptz;

-- Skipped events, for the count `outboxctl status` shows. Retention cleanup
-- never deletes a skipped event: it is unpublished, and its row is the
-- record of the operator's decision (see OpsCleanupEvents).
CREATE INDEX outbox_skipped_idx
    ON outbox_events (skipped_at)
    WHERE skipped_at IS NOT NULL;

-- outbox_cleanup_horizon remembers the newest cutoff retention cleanup has
-- used: events published before it may be gone, so a replay whose window
-- starts before it would be incomplete and is refused. One row.
CREATE TABLE outbox_cleanup_horizon (
    singleton     boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    deleted_before timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now()
);

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
DROP TABLE outbox_cleanup_horizon;
DROP INDEX outbox_skipped_idx;
ALTER TABLE outbox_events DROP COLUMN replay_requested_at;
