-- Statements for the shipping address (OrderCreated schema v2), loaded by
-- name (outbox/namedsql) with the package's other .sql files (sql.go).

-- name: InsertOrderWithShippingAddress :one
-- InsertOrder plus the shipping address (jsonb), for an order that has one;
-- an order without one keeps running the plain InsertOrder, which the
-- benchmark measures.
INSERT INTO orders (id, customer_email, currency, payment_method, amount, items, created_event_id, shipping_address)
VALUES (@id, @customer_email, @currency, @payment_method, @amount, @items, @created_event_id, @shipping_address)
RETURNING status;
