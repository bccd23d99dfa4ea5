-- The suite's statements (loaded and bound in sql.go).

-- name: SourcetestEndConnections :exec
-- Ends every connection of one application name: a relay dies as a killed
-- process would, its transactions cut off where they were.
SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = @application_name::text;
