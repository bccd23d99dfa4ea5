-- Statements of internal/bench/benchdb, loaded by name (outbox/namedsql).

-- name: ServerVersion :one
SELECT current_setting('server_version');
