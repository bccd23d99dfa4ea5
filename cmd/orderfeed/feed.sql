-- The order feed's statements (loaded and bound in feed.go). order_feed is
-- the example consumer's own table: one row per order seen on the stream,
-- with the sequence of the order's last applied event (the consumer's
-- position, natsconsumer.Positions), which commits with the row.

-- name: FeedSchema :exec
-- The example's whole schema, created at start when missing: it has no
-- migrations of its own.
CREATE TABLE IF NOT EXISTS order_feed (
    order_id      text        PRIMARY KEY,
    status        text        NOT NULL DEFAULT '',
    amount        bigint,
    currency      text,
    created_at    timestamptz,
    cancelled_at  timestamptz,
    last_sequence bigint      NOT NULL CHECK (last_sequence > 0),
    -- events_applied counts the events applied to the row: equal to
    -- last_sequence while each event is applied once (the tests' witness).
    events_applied bigint     NOT NULL DEFAULT 0
);

-- name: FeedLastSequence :one
-- The order's position, locked until the message's transaction ends.
SELECT coalesce(max(last_sequence), 0)::bigint
FROM (SELECT last_sequence FROM order_feed WHERE order_id = @order_id FOR UPDATE) AS p;

-- name: FeedSetSequence :exec
INSERT INTO order_feed (order_id, last_sequence, events_applied) VALUES (@order_id, @last_sequence, 1)
ON CONFLICT (order_id) DO UPDATE
SET last_sequence = excluded.last_sequence, events_applied = order_feed.events_applied + 1;

-- name: FeedCreated :exec
INSERT INTO order_feed (order_id, status, amount, currency, created_at, last_sequence)
VALUES (@order_id, 'created', @amount, @currency, @created_at, @last_sequence)
ON CONFLICT (order_id) DO UPDATE
SET status = 'created', amount = excluded.amount, currency = excluded.currency, created_at = excluded.created_at;

-- name: FeedCancelled :exec
INSERT INTO order_feed (order_id, status, cancelled_at, last_sequence)
VALUES (@order_id, 'cancelled', @cancelled_at, @last_sequence)
ON CONFLICT (order_id) DO UPDATE SET status = 'cancelled', cancelled_at = excluded.cancelled_at;
