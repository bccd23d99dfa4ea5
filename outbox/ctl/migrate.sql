-- outboxctl migrate's statements (migrate.go).

-- name: DatabaseName :one
-- The database DATABASE_URL names: migrate refuses PostgreSQL's own.
SELECT current_database()::text AS name;
