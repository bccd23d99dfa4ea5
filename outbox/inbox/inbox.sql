-- The inbox's statements (loaded and bound in sql.go). processed_events has
-- one row per (consumer, event) whose effect is done; its primary key is
-- what makes a second delivery visible. Retention cleanup (package outbox,
-- OpsCleanupInbox) deletes old rows whose event is gone.

-- name: InboxRecord :one
-- The seed's statement: a row returned means this (consumer, event) is new.
-- Run in the caller's transaction, so the row commits with the effect; a
-- concurrent delivery's insert waits on the primary key until this
-- transaction ends, then finds the row (it committed) or inserts (it rolled
-- back).
INSERT INTO processed_events (consumer_name, event_id)
VALUES (@consumer_name, @event_id)
ON CONFLICT DO NOTHING
RETURNING event_id;

-- name: InboxSeen :one
-- Whether the (consumer, event) is recorded, for a consumer whose effect is
-- outside this database and is recorded after it (Inbox.Seen).
SELECT EXISTS (
    SELECT 1 FROM processed_events WHERE consumer_name = @consumer_name AND event_id = @event_id
);
