-- testdb's statements (testdb.go, logical.go), sent on the server's
-- administrative database. CREATE, DROP and ALTER DATABASE name a database,
-- which no placeholder can stand for: those stay in testdb.go.

-- name: LockTemplates :exec
-- One template builder at a time across every test process on the machine.
SELECT pg_advisory_lock(@lock_key);

-- name: UnlockTemplates :exec
SELECT pg_advisory_unlock(@lock_key);

-- name: TemplateReady :one
-- Whether the template of this migration set is built (a builder marks it
-- a template last, so a half-built one is rebuilt).
SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = @name AND datistemplate);

-- name: TerminateSlotSessions :one
-- Ends the sessions that stream a replication slot of the database: how
-- many were still active.
SELECT count(pg_terminate_backend(active_pid))
FROM pg_replication_slots
WHERE database = @name AND active;

-- name: DropIdleSlots :exec
-- The database's replication slots, which keep it from being dropped.
SELECT pg_drop_replication_slot(slot_name)
FROM pg_replication_slots
WHERE database = @name AND NOT active;

-- name: LogPartition :one
-- The log partition of an aggregate (SameLogPartition), on a migrated
-- test database.
SELECT outbox_log_partition(@aggregate_type, @aggregate_id);

-- name: SetSourceFor :one
-- Sets the recorded relay source to @source inside the caller's
-- transaction (EnqueueAsRead, which sets it back before it commits) and
-- returns the one it replaced.
WITH old AS (SELECT source FROM outbox_source)
UPDATE outbox_source SET source = @source
FROM old
RETURNING old.source AS was;
