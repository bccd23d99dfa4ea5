-- A used database (useddb.go): what an earlier run left behind.

-- name: CustomerKeys :one
-- The customer keys an earlier run made: none means it encrypted nothing
-- (no master key).
SELECT count(*) FROM customer_keys;
