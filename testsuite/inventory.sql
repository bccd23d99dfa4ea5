-- Read-only statements the invariant checker runs on the inventory
-- service's own database (cmd/inventory: its tables beside its outbox),
-- bound to their Go types in sql.go.

-- name: InventoryEvents :many
-- Every inventory event with the answers that name it: a committed reserve
-- or release stored exactly one answer naming its event.
SELECT e.event_id::text                    AS event_id,
       e.aggregate_id,
       e.event_type,
       e.aggregate_sequence,
       e.published_at IS NOT NULL          AS published,
       e.quarantined_at IS NOT NULL        AS quarantined,
       (SELECT count(*) FROM inventory_requests r WHERE r.event_id = e.event_id) AS answers
FROM outbox_events e
WHERE e.skipped_at IS NULL
ORDER BY e.aggregate_type, e.aggregate_id, e.aggregate_sequence;

-- name: InventoryAnswersWithoutEvent :one
-- A stored answer naming an event the outbox does not hold: a change
-- committed without its event.
SELECT count(*)
FROM inventory_requests r
WHERE r.event_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM outbox_events e WHERE e.event_id = r.event_id);

-- name: InventoryReservations :many
-- Every order's reservation with its events and what it holds.
SELECT r.order_id,
       r.status,
       count(e.event_id) FILTER (WHERE e.event_type = 'StockReserved') AS reserved_events,
       count(e.event_id) FILTER (WHERE e.event_type = 'StockReleased') AS released_events,
       (SELECT coalesce(sum(i.quantity), 0) FROM inventory_reservation_items i WHERE i.order_id = r.order_id)::bigint AS held
FROM inventory_reservations r
LEFT JOIN outbox_events e ON e.aggregate_type = 'inventory_reservation' AND e.aggregate_id = r.order_id
GROUP BY r.order_id, r.status
ORDER BY r.order_id;

-- name: InventoryStock :many
-- Every SKU's levels beside what the reservations still held hold of it.
SELECT s.sku,
       s.available,
       s.reserved,
       (SELECT coalesce(sum(i.quantity), 0)
        FROM inventory_reservation_items i
        JOIN inventory_reservations r ON r.order_id = i.order_id
        WHERE i.sku = s.sku AND r.status = 'reserved')::bigint AS held
FROM inventory_stock s
ORDER BY s.sku;
