-- Read-only statements the invariant checker runs after recovery, bound to
-- their Go types in sql.go.

-- name: Events :many
-- Every event of outbox_events and of the log (OUTFLOW_RELAY_SOURCE=log),
-- with the bookkeeping the checks need: a log event is published once its
-- partition's cursor passed it and no hold of its order covers it. The one
-- definition of "events" in this file: sql.go puts it where a statement
-- says /* Events */ (withEvents).
SELECT event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type,
       published_at IS NOT NULL AS published, skipped_at IS NOT NULL AS skipped,
       quarantined_at IS NOT NULL AS quarantined
FROM outbox_events
UNION ALL
SELECT l.event_id, l.aggregate_type, l.aggregate_id, l.aggregate_sequence, l.event_type,
       (l.gate, l.pos) <= (c.gate, c.pos) AND h.aggregate_id IS NULL AND s.event_id IS NULL AS published,
       s.event_id IS NOT NULL AS skipped,
       h.quarantined_at IS NOT NULL AS quarantined
FROM outbox_log l
JOIN outbox_log_cursors c ON c.partition = l.partition
LEFT JOIN outbox_log_holds h ON h.aggregate_type = l.aggregate_type AND h.aggregate_id = l.aggregate_id
                            AND (l.gate, l.pos) >= (h.from_gate, h.from_pos)
LEFT JOIN outbox_log_skips s ON s.event_id = l.event_id;

-- name: OrderFacts :many
WITH events AS (/* Events */)
SELECT o.id::text                 AS order_id,
       o.status,
       o.payment_method,
       o.amount,
       o.cancel_event_id IS NOT NULL AS cancel_requested,
       o.applied_sequence,
       count(e.event_id) FILTER (WHERE e.event_type = 'OrderCreated')   AS created_events,
       count(e.event_id) FILTER (WHERE e.event_type = 'OrderCancelled') AS cancelled_events,
       count(e.event_id)                                                AS events,
       coalesce(max(e.aggregate_sequence), 0)                           AS max_sequence,
       count(e.event_id) FILTER (WHERE NOT e.published)                 AS unpublished
FROM orders o
LEFT JOIN events e ON e.aggregate_type = 'order' AND e.aggregate_id = o.id::text
GROUP BY o.id
ORDER BY o.id;

-- name: OrphanEvents :one
-- An order event whose order does not exist: a rolled-back change that left
-- its event behind (invariant 2).
WITH events AS (/* Events */)
SELECT count(*)
FROM events e
WHERE e.aggregate_type = 'order'
  AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id::text = e.aggregate_id);

-- name: EventIDs :many
-- Every event that must have its workflow: all but those an operator skipped
-- (a skip is final: the event is never published; SkippedEvents lists them)
-- and the webhooks' (aggregate payment), which are signals to the order's
-- saga, not workflows of their own (WebhookFacts checks them).
WITH events AS (/* Events */)
SELECT event_id::text AS event_id FROM events
WHERE NOT skipped AND aggregate_type <> 'payment'
ORDER BY event_id;

-- name: SkippedEvents :many
-- The events an operator skipped, with the audit the skip must leave.
-- A skipped log event's audit is its outbox_log_skips row; the log never
-- publishes it (its cursor's pass is not a publish).
SELECT event_id, aggregate_type, event_type, skipped_by, reason, published
FROM (
    SELECT event_id::text AS event_id, aggregate_type, event_type, coalesce(skipped_by, '') AS skipped_by,
           coalesce(skip_reason, '') AS reason,
           published_at IS NOT NULL AS published
    FROM outbox_events
    WHERE skipped_at IS NOT NULL
    UNION ALL
    SELECT s.event_id::text, l.aggregate_type, l.event_type, s.skipped_by, coalesce(s.reason, ''), false
    FROM outbox_log_skips s
    JOIN outbox_log l ON l.pos = s.pos
) skipped
ORDER BY event_id;

-- name: Progress :one
-- A skipped event is settled: it is never published.
WITH events AS (/* Events */)
SELECT (SELECT count(*) FROM events WHERE NOT published AND NOT skipped) AS unpublished,
       (SELECT count(*) FROM orders WHERE status NOT IN ('confirmed', 'payment_failed', 'cancelled')
                                       OR (cancel_event_id IS NOT NULL AND status <> 'cancelled')) AS unfinished;

-- name: OrderStatus :one
SELECT status FROM orders WHERE id = @id;

-- name: Counts :one
SELECT (SELECT count(*) FROM orders) AS orders,
       (SELECT count(*) FROM outbox_events) + (SELECT count(*) FROM outbox_log) AS events;

-- name: EventTimes :many
-- Every unskipped event's commit time, of outbox_events and of the log.
SELECT event_id, occurred_at
FROM (
    SELECT event_id::text AS event_id, occurred_at FROM outbox_events WHERE skipped_at IS NULL
    UNION ALL
    SELECT l.event_id::text, l.occurred_at
    FROM outbox_log l
    WHERE NOT EXISTS (SELECT 1 FROM outbox_log_skips s WHERE s.pos = l.pos)
) e
ORDER BY occurred_at;

-- name: TerminateBackends :one
-- Every backend on this database but the caller's own.
SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid();

-- name: PublishedOutOfOrder :one
-- Events published before a predecessor of the same aggregate.
SELECT count(*)
FROM (
    SELECT published_at,
           lag(published_at) OVER (PARTITION BY aggregate_type, aggregate_id ORDER BY aggregate_sequence) AS prev
    FROM outbox_events
) x
WHERE prev > published_at;

-- name: SampleLanes :many
-- The event ids of @lanes aggregates, in sequence order, from outbox_events
-- and the log (an aggregate switched to the log has its earlier events in
-- the one, its later ones in the other). An event an operator skipped has
-- no workflow and is left out.
WITH events AS (
    SELECT aggregate_type, aggregate_id, aggregate_sequence, event_id FROM (/* Events */) e WHERE NOT skipped
)
SELECT array_agg(event_id::text ORDER BY aggregate_sequence) AS event_ids
FROM events
WHERE aggregate_id IN (SELECT DISTINCT aggregate_id FROM events ORDER BY 1 LIMIT @lanes)
GROUP BY aggregate_type, aggregate_id;

-- name: FeedFacts :many
-- The JetStream consumer's (cmd/orderfeed, inbox name orderfeed) view of
-- each order beside the order's events in the outbox: its inbox rows, its
-- position and how many events it applied to the order's row.
SELECT o.id::text                                                      AS order_id,
       count(e.event_id)                                               AS events,
       coalesce(max(e.aggregate_sequence), 0)                          AS max_sequence,
       count(e.event_id) FILTER (WHERE e.event_type = 'OrderCancelled') AS cancelled_events,
       count(p.event_id)                                               AS inbox_rows,
       coalesce(f.last_sequence, 0)                                    AS last_sequence,
       coalesce(f.events_applied, 0)                                   AS events_applied,
       coalesce(f.status, '')                                          AS status
FROM orders o
LEFT JOIN outbox_events e ON e.aggregate_type = 'order' AND e.aggregate_id = o.id::text
LEFT JOIN processed_events p ON p.consumer_name = 'orderfeed' AND p.event_id = e.event_id
LEFT JOIN order_feed f ON f.order_id = o.id::text
GROUP BY o.id, f.last_sequence, f.events_applied, f.status
ORDER BY o.id;

-- name: WebhookFacts :one
-- The Stripe webhooks the order API recorded (cmd/orderapi, inbox consumer
-- stripe.webhook) beside their events (aggregate payment): one inbox row per
-- Stripe event, at most one event per row (none for an event about no order
-- of this service), each event published and about an existing order.
WITH events AS (/* Events */)
SELECT (SELECT count(*) FROM processed_events WHERE consumer_name = 'stripe.webhook') AS inbox_rows,
       (SELECT count(*) FROM events WHERE aggregate_type = 'payment') AS events,
       (SELECT count(*) FROM events
        WHERE aggregate_type = 'payment' AND NOT published AND NOT skipped) AS unpublished,
       (SELECT count(*) FROM events WHERE aggregate_type = 'payment' AND quarantined) AS quarantined,
       (SELECT count(*) FROM events e
        WHERE e.aggregate_type = 'payment'
          AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id::text = e.aggregate_id)) AS orphans;

-- name: SourceCounts :one
-- Where the events were written: outbox_events (the poll and cdc sources)
-- or the append-only log (the log source).
SELECT (SELECT count(*) FROM outbox_events) AS outbox_events, (SELECT count(*) FROM outbox_log) AS outbox_log;

-- name: LogBacklogFacts :one
-- The log source's backlog test: the log's events, outbox_events' (none
-- expected), the orders under a hold, and the row versions updated or
-- deleted in the log's partitions since the database was made (the
-- statistics the server keeps per table).
SELECT (SELECT count(*) FROM outbox_log)       AS log_events,
       (SELECT count(*) FROM outbox_events)    AS outbox_events,
       (SELECT count(*) FROM outbox_log_holds) AS holds,
       (SELECT coalesce(sum(n_tup_upd + n_tup_del), 0)::bigint
        FROM pg_stat_user_tables
        WHERE relid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'outbox_log'::regclass)) AS log_updates;
