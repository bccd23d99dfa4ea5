-- The suite's statements (loaded and bound in sql.go).

-- name: SourcetestEndConnections :exec
-- Ends every connection of one application name: a relay dies as a killed
-- process would, its transactions cut off where they were.
SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = @application_name::text;

-- name: SourcetestSlotActive :one
-- Whether a session streams the replication slot @slot_name (the cdc
-- relay's stream is up).
SELECT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = @slot_name::text AND active) AS active;
