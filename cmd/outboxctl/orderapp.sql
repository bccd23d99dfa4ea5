-- outboxctl's order-specific parts (orderapp.go; bound in sql.go) ask first
-- whether the order app's tables exist here: outboxctl also serves a
-- database that holds only the outbox's own tables.

-- name: MissingTables
-- Those of @tables this session cannot see (resolved by its search_path,
-- as the statements that would use them are).
SELECT t
FROM unnest(@tables::text[]) AS t
WHERE to_regclass(t) IS NULL
ORDER BY t;
