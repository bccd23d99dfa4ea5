-- Statements of the peers bench itself, loaded by name (internal/namedsql).
-- They read the server's statistics; the contenders' own SQL is theirs.

-- name: ServerVersion :one
SHOW server_version;

-- name: WALPosition :one
-- The server's WAL insert position in bytes. It is server-wide: other
-- sessions' writes in the same window count too.
SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint;

-- name: OtherClients :one
-- Client connections to this database besides this one. A backend flushes
-- its table statistics when it exits, so once none is left the counters
-- below include all their work.
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend';

-- name: ClearStatsSnapshot :exec
SELECT pg_stat_clear_snapshot();

-- name: TupleChurn :one
-- Row versions made dead in this database since it was created: every
-- UPDATE and DELETE leaves one, whether or not vacuum has removed it since
-- (n_dead_tup would drop when autovacuum runs mid-measurement).
SELECT coalesce(sum(n_tup_upd + n_tup_del), 0)::bigint FROM pg_stat_user_tables;
