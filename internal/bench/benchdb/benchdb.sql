-- Statements of internal/bench/benchdb, loaded by name (internal/namedsql).

-- name: ServerVersion :one
SELECT current_setting('server_version');
