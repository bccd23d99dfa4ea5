-- pgcluster's statements (pgcluster.go).

-- name: WALLevel :one
-- Whether the server decodes its WAL logically (the CDC relay's source).
SELECT current_setting('wal_level');
