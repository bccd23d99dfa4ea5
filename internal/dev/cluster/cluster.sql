-- The dev cluster's statements: on the server's administrative database
-- (cluster.go, schema.go, testdb.go) and on Temporal's own database
-- (shards.go). CREATE and DROP DATABASE name a database, which no
-- placeholder can stand for: those stay in the Go files.

-- name: TerminateBackends :one
-- Ends every session on the Temporal databases (a failover or an
-- idle-connection killer would): how many there were.
SELECT count(pg_terminate_backend(pid))
FROM pg_stat_activity
WHERE datname IN (@main, @visibility) AND pid <> pg_backend_pid();

-- name: Connections :one
SELECT count(*) FILTER (WHERE datname = @main) AS main,
       count(*) FILTER (WHERE datname = @visibility) AS visibility
FROM pg_stat_activity;

-- name: DatabaseExists :one
SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = @name);

-- name: DatabasesLike :many
-- The databases whose name starts a test cluster's (@pattern is a LIKE
-- pattern).
SELECT datname FROM pg_database WHERE datname LIKE @pattern;

-- name: Shards :many
-- Temporal's shards table: each shard's ShardInfo, which names its owner.
SELECT shard_id, data, data_encoding FROM shards;
