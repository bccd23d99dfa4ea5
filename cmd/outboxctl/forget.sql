-- outboxctl forget-customer (run by forget.go, bound in sql.go): the customer's orders, in
-- PostgreSQL, the system of record.

-- name: CustomerOrders
-- Inside the erasure's transaction: the customer's orders, locked until it
-- ends, so that no cancel of theirs commits (and starts a workflow) between
-- the check of their workflows and the commit. An order placed meanwhile is
-- a new row; its workflow's encoder waits for the erasure and makes a new
-- key (internal/codec, KeyBySubject).
SELECT id::text
FROM orders
WHERE lower(btrim(customer_email)) = @email
ORDER BY created_at, id
FOR UPDATE;
