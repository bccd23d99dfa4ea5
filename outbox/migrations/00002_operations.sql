-- The outbox's half of outflow's migration 00002 (operations, issue 7): the
-- replay mark and the cleanup horizon, both written only by package outbox
-- (Replay and the relay's mark; Cleanup). The order app's half, the cancel's
-- sequence on the order, is migrations/00002_operations.sql.

-- +goose Up

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

-- +goose Down
DROP TABLE outbox_cleanup_horizon;
DROP INDEX outbox_skipped_idx;
ALTER TABLE outbox_events DROP COLUMN replay_requested_at;
