-- The inventory service's statements (loaded in sql.go, by name). Every
-- statement runs in the request's transaction, after the inbox recorded
-- its Idempotency-Key.

-- name: RequestByKey
-- The stored answer of an Idempotency-Key the inbox found already recorded.
SELECT request_hash, status_code, response
FROM inventory_requests
WHERE idempotency_key = @idempotency_key;

-- name: InsertRequest
INSERT INTO inventory_requests (idempotency_key, request_hash, status_code, response, event_id)
VALUES (@idempotency_key, @request_hash, @status_code, @response, @event_id);

-- name: ReservationForUpdate
-- The order's reservation, locked for the rest of the transaction so that
-- a reserve and a release of one order never interleave.
SELECT workflow_id, status
FROM inventory_reservations
WHERE order_id = @order_id
FOR UPDATE;

-- name: LockOrder
-- Serialises every request about one order, including the first, for
-- which no reservation row exists to lock yet.
SELECT pg_advisory_xact_lock(hashtextextended('inventory.order:' || @order_id, 0));

-- name: StockForUpdate
-- The stock of the requested SKUs, locked in SKU order (two reservations
-- sharing SKUs lock them in the same order and cannot deadlock).
SELECT sku, available
FROM inventory_stock
WHERE sku = ANY(@skus::text[])
ORDER BY sku
FOR UPDATE;

-- name: HoldStock
UPDATE inventory_stock
SET available = available - @quantity, reserved = reserved + @quantity, updated_at = now()
WHERE sku = @sku;

-- name: ReturnStock
UPDATE inventory_stock
SET available = available + @quantity, reserved = reserved - @quantity, updated_at = now()
WHERE sku = @sku;

-- name: InsertReservation
INSERT INTO inventory_reservations (order_id, workflow_id, status)
VALUES (@order_id, @workflow_id, 'reserved');

-- name: InsertReservationItem
INSERT INTO inventory_reservation_items (order_id, sku, quantity)
VALUES (@order_id, @sku, @quantity);

-- name: ReservationItems
SELECT sku, quantity
FROM inventory_reservation_items
WHERE order_id = @order_id
ORDER BY sku;

-- name: MarkReleased
UPDATE inventory_reservations
SET status = 'released', released_at = now()
WHERE order_id = @order_id;

-- name: InsertReleasedTombstone
-- A release for an order that holds nothing: the row makes a reserve that
-- arrives later (after the saga gave up on it) a rejection.
INSERT INTO inventory_reservations (order_id, workflow_id, status, released_at)
VALUES (@order_id, @workflow_id, 'released', now());

-- name: SetStock
-- PUT /stock/{sku}: sets what is available (on hand and not reserved).
INSERT INTO inventory_stock (sku, available)
VALUES (@sku, @available)
ON CONFLICT (sku) DO UPDATE SET available = EXCLUDED.available, updated_at = now()
RETURNING available, reserved;

-- name: Stock
SELECT available, reserved
FROM inventory_stock
WHERE sku = @sku;
