-- +goose Up

-- The shipping address of an order placed with one (OrderCreated schema
-- version 2): name, line1, line2 (optional), city, postal_code and an ISO
-- 3166-1 alpha-2 country, as the order API validated them. NULL for orders
-- without one, which includes every order placed before this migration.
-- Adding a nullable column without a default rewrites nothing.
ALTER TABLE orders ADD COLUMN shipping_address jsonb;

-- +goose Down
ALTER TABLE orders DROP COLUMN shipping_address;
