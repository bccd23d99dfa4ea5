-- The statements of package schemaset (loaded by schemaset.go). They run on
-- a database/sql transaction beside goose's own store, whose rows they
-- write, so their placeholders are positional.

-- name: LockSet
-- Serialises everything that decides or writes a set's versions: the
-- adoption of a legacy database here and goose's Up, which takes the same
-- key as a session lock. Held to the end of the transaction.
SELECT pg_advisory_xact_lock($1);

-- name: TablesPresent
-- How many of the tables a set's first legacy migration made exist, and
-- which, looked up through search_path as the migrations' own unqualified
-- names are.
SELECT count(*), coalesce(string_agg(t, ', ' ORDER BY t), '')
FROM unnest($1::text[]) AS t
WHERE to_regclass(t) IS NOT NULL;
