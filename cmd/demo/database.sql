-- The demo's own database (database.go), asked of the server's
-- administrative database. Creating and dropping it names the database,
-- which no placeholder can stand for: those stay in database.go.

-- name: DatabaseExists :one
SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = @name);

-- name: DropIdleSlots :exec
-- The replication slots a cdc relay left in the database, which keep it
-- from being dropped; an active one (a relay still running) stays, and the
-- drop then says the database is in use.
SELECT pg_drop_replication_slot(slot_name)
FROM pg_replication_slots
WHERE database = @name AND NOT active;
