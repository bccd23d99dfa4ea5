-- The statements of package schemaset (loaded and bound by sql.go). They run
-- on a database/sql transaction beside goose's own store, whose rows they
-- write, through the bound statements' SQL and Args (pgx's stdlib driver
-- passes the named arguments on to pgx).

-- name: LockSet :exec
-- Serialises everything that decides or writes a set's versions: the
-- adoption of a legacy database here and goose's Up, which takes the same
-- key as a session lock. Held to the end of the transaction.
SELECT pg_advisory_xact_lock(@lock_key);

-- name: TablesPresent :one
-- How many of the tables a set's first legacy migration made exist, and
-- which, looked up through search_path as the migrations' own unqualified
-- names are.
SELECT count(*) AS present_count, coalesce(string_agg(t, ', ' ORDER BY t), '') AS present
FROM unnest(@tables::text[]) AS t
WHERE to_regclass(t) IS NOT NULL;
