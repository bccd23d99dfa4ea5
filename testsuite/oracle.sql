-- What the chaos soak's operator and oracle read (operator.go, oracle.go),
-- bound to their Go types in sql.go.
-- Read-only, but for the poison events the soak enqueues through the outbox
-- API itself (poison.go). Each reads outbox_events and the log
-- (OUTFLOW_RELAY_SOURCE=log) alike, but ReplayFlagged, ReplayProgress and
-- OrderMarks, which follow outbox_events' replay marks: a log replay is a
-- hold (LogReplayHolds), and the log keeps no mark per event. A log event
-- is published once its partition's cursor passed it and no hold of its
-- order owns it; skipped when outbox_log_skips has its position.

-- name: ReplayFlagged :many
-- The events a replay command just flagged: replay requested at or after the
-- command started, in its window (and of its aggregate, when it named one).
SELECT event_id::text AS event_id, aggregate_id AS order_id, aggregate_sequence AS sequence, replay_requested_at AS requested
FROM outbox_events
WHERE replay_requested_at >= @since
  AND occurred_at >= @from AND occurred_at < @to
  AND (@aggregate::text = '' OR (aggregate_type = 'order' AND aggregate_id = @aggregate::text));

-- name: ReplayProgress :many
-- Where the watched replays stand: a mark clears replay_requested_at and
-- sets published_at.
SELECT event_id::text AS event_id, replay_requested_at AS requested, published_at AS published
FROM outbox_events
WHERE event_id = ANY(@ids::uuid[]);

-- name: LateCancelCandidate :many
-- A recently confirmed order of the default buyer, not cancelled, whose
-- OrderCreated is published: the operator replays it and the buyer cancels
-- it at once (a new event behind a replayed one).
-- In the log: its cursor passed it and its order has no hold.
SELECT o.id::text AS order_id, e.occurred_at AS occurred
FROM orders o
JOIN (
    SELECT aggregate_type, aggregate_id, aggregate_sequence, occurred_at
    FROM outbox_events
    WHERE published_at IS NOT NULL AND replay_requested_at IS NULL
    UNION ALL
    SELECT l.aggregate_type, l.aggregate_id, l.aggregate_sequence, l.occurred_at
    FROM outbox_log l
    JOIN outbox_log_cursors c ON c.partition = l.partition
    WHERE (l.gate, l.pos) <= (c.gate, c.pos)
      AND NOT EXISTS (SELECT 1 FROM outbox_log_holds h WHERE h.aggregate_type = l.aggregate_type AND h.aggregate_id = l.aggregate_id)
) e ON e.aggregate_type = 'order' AND e.aggregate_id = o.id::text AND e.aggregate_sequence = 1
WHERE o.status = 'confirmed' AND o.cancel_event_id IS NULL
  AND o.customer_email = 'buyer@example.com'
  AND e.occurred_at > now() - interval '20 seconds'
ORDER BY random()
LIMIT 1;

-- name: StillFlagged :many
-- Replayed events that are still flagged after the drain: published (or not)
-- but the replay never marked, so it was never delivered. In the log: a
-- replay's hold still there (its event is the hold's, '-').
SELECT event_id, aggregate, sequence, published, requested
FROM (
    SELECT event_id::text AS event_id, aggregate_type || '/' || aggregate_id AS aggregate, aggregate_sequence AS sequence,
           published_at IS NOT NULL AS published, replay_requested_at AS requested
    FROM outbox_events
    WHERE replay_requested_at IS NOT NULL
    UNION ALL
    SELECT '-', aggregate_type || '/' || aggregate_id, 0, false, created_at
    FROM outbox_log_holds
    WHERE replay_gate IS NOT NULL
) f
ORDER BY event_id, aggregate;

-- name: OracleEvents :many
-- Every event but those an operator skipped, with its order's customer.
SELECT e.event_id::text AS event_id, e.aggregate_type, e.aggregate_id, e.aggregate_sequence AS sequence, e.event_type AS type,
       e.occurred_at AS occurred, coalesce(lower(btrim(o.customer_email)), '') AS customer
FROM (
    SELECT event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, occurred_at
    FROM outbox_events
    WHERE skipped_at IS NULL
    UNION ALL
    SELECT l.event_id, l.aggregate_type, l.aggregate_id, l.aggregate_sequence, l.event_type, l.occurred_at
    FROM outbox_log l
    WHERE NOT EXISTS (SELECT 1 FROM outbox_log_skips s WHERE s.pos = l.pos)
) e
LEFT JOIN orders o ON e.aggregate_type = 'order' AND e.aggregate_id = o.id::text
ORDER BY e.aggregate_type, e.aggregate_id, e.aggregate_sequence;

-- name: Erasures :many
-- Every forget-customer the database accepted (the audit is the truth, also
-- when the CLI lost its connection before it could answer).
SELECT subject_hash AS subject, coalesce(key_id::text, '') AS key_id, erased_at AS at FROM customer_key_erasures ORDER BY id;

-- name: Unfinished :many
-- The orders a drain is still waiting for, with their events.
SELECT o.id::text AS order_id, o.status, lower(btrim(o.customer_email)) AS customer,
       o.cancel_event_id IS NOT NULL AS cancel_requested, o.created_at AS created,
       coalesce(array_agg(e.event_id::text ORDER BY e.aggregate_sequence) FILTER (WHERE e.event_id IS NOT NULL), '{}') AS events
FROM orders o
LEFT JOIN (
    SELECT event_id, aggregate_type, aggregate_id, aggregate_sequence FROM outbox_events
    UNION ALL
    SELECT event_id, aggregate_type, aggregate_id, aggregate_sequence FROM outbox_log
) e ON e.aggregate_type = 'order' AND e.aggregate_id = o.id::text
WHERE o.status NOT IN ('confirmed', 'payment_failed', 'cancelled')
   OR (o.cancel_event_id IS NOT NULL AND o.status <> 'cancelled')
GROUP BY o.id
ORDER BY o.id;

-- name: UnpublishedEvents :many
-- Unpublished, unskipped events, for the drain's diagnosis; a log event
-- with its order's hold's attempts, quarantine and last error.
SELECT event_id, aggregate, sequence, type, attempts, quarantined, last_error
FROM (
    SELECT event_id::text AS event_id, aggregate_type || '/' || aggregate_id AS aggregate, aggregate_sequence AS sequence,
           event_type AS type, attempt_count AS attempts, quarantined_at IS NOT NULL AS quarantined,
           coalesce(last_error, '') AS last_error, occurred_at
    FROM outbox_events
    WHERE published_at IS NULL AND skipped_at IS NULL
    UNION ALL
    SELECT l.event_id::text, l.aggregate_type || '/' || l.aggregate_id, l.aggregate_sequence,
           l.event_type, coalesce(h.attempts, 0), h.quarantined_at IS NOT NULL,
           coalesce(h.last_error, CASE WHEN h.aggregate_id IS NULL THEN 'after its partition''s cursor' ELSE '' END), l.occurred_at
    FROM outbox_log l
    JOIN outbox_log_cursors c ON c.partition = l.partition
    LEFT JOIN outbox_log_holds h ON h.aggregate_type = l.aggregate_type AND h.aggregate_id = l.aggregate_id
                                AND (l.gate, l.pos) >= (h.from_gate, h.from_pos)
    WHERE ((l.gate, l.pos) > (c.gate, c.pos) OR h.aggregate_id IS NOT NULL)
      AND NOT EXISTS (SELECT 1 FROM outbox_log_skips s WHERE s.pos = l.pos)
) u
ORDER BY occurred_at
LIMIT 20;

-- name: PoisonExists :one
SELECT EXISTS (SELECT 1 FROM outbox_events WHERE aggregate_type = @aggregate_type AND aggregate_id = @aggregate_id)
    OR EXISTS (SELECT 1 FROM outbox_log WHERE aggregate_type = @aggregate_type AND aggregate_id = @aggregate_id);

-- name: CustomerUnsettled :one
-- The customer's orders that are not settled, as the order table says (what
-- forget-customer's refusal tells the operator to wait for).
SELECT count(*)
FROM orders
WHERE lower(btrim(customer_email)) = @email
  AND (status NOT IN ('confirmed', 'payment_failed', 'cancelled')
       OR (cancel_event_id IS NOT NULL AND status <> 'cancelled'));

-- name: OrderMarks :many
-- Every order event of the orders of the given events, with its mark.
SELECT e.aggregate_id AS order_id, e.event_id::text AS event_id, e.aggregate_sequence AS sequence, e.published_at AS published
FROM outbox_events e
WHERE e.aggregate_type = 'order'
  AND e.aggregate_id IN (SELECT aggregate_id FROM outbox_events WHERE event_id = ANY(@ids::uuid[]) AND aggregate_type = 'order');

-- name: LogReplayHolds :many
-- Of the given orders, those a log replay's hold still owns: the replay is
-- delivered when its hold is released (its worker caught up with the
-- cursor), which the log records by deleting the hold.
SELECT aggregate_id AS order_id
FROM outbox_log_holds
WHERE aggregate_type = 'order' AND aggregate_id = ANY(@order_ids::text[]) AND replay_gate IS NOT NULL;

-- name: UnsettledPoison :one
-- Poison aggregates' events neither skipped nor published yet: a poison
-- event is never published, and the deliverable ones behind it wait for
-- its skip. In the log: after its partition's cursor, or owned by a hold of
-- its aggregate; and every hold of a poison aggregate, since a hold whose
-- last event is a skipped one stays until its tombstone is handed on, and
-- a replay of the order is refused until then.
SELECT (SELECT count(*) FROM outbox_log_holds WHERE aggregate_type = @aggregate_type)
     + (SELECT count(*) FROM outbox_events WHERE aggregate_type = @aggregate_type AND skipped_at IS NULL AND published_at IS NULL)
     + (SELECT count(*) FROM outbox_log l
        JOIN outbox_log_cursors c ON c.partition = l.partition
        WHERE l.aggregate_type = @aggregate_type
          AND NOT EXISTS (SELECT 1 FROM outbox_log_skips s WHERE s.pos = l.pos)
          AND ((l.gate, l.pos) > (c.gate, c.pos)
               OR EXISTS (SELECT 1 FROM outbox_log_holds h
                          WHERE h.aggregate_type = l.aggregate_type AND h.aggregate_id = l.aggregate_id
                            AND (l.gate, l.pos) >= (h.from_gate, h.from_pos))));

-- name: PoisonDeliverable :one
-- The unskipped events of one poison aggregate: what a replay of it may
-- deliver again.
SELECT (SELECT count(*) FROM outbox_events WHERE aggregate_type = @aggregate_type AND aggregate_id = @aggregate_id AND skipped_at IS NULL)
     + (SELECT count(*) FROM outbox_log l
        WHERE l.aggregate_type = @aggregate_type AND l.aggregate_id = @aggregate_id
          AND NOT EXISTS (SELECT 1 FROM outbox_log_skips s WHERE s.pos = l.pos));

-- name: PoisonReplaysPending :one
-- Replays of poison aggregates not delivered yet: flagged events, or the
-- log's replay holds.
SELECT (SELECT count(*) FROM outbox_events WHERE aggregate_type = @aggregate_type AND replay_requested_at IS NOT NULL)
     + (SELECT count(*) FROM outbox_log_holds WHERE aggregate_type = @aggregate_type AND replay_gate IS NOT NULL);

-- name: PoisonRedelivered :one
-- The unskipped events of one poison aggregate a relay marked again after
-- @since (a replay's delivery), with no replay pending.
SELECT count(*)
FROM outbox_events
WHERE aggregate_type = @aggregate_type AND aggregate_id = @aggregate_id
  AND skipped_at IS NULL AND replay_requested_at IS NULL AND published_at >= @since;

-- name: PoisonReplayHeld :one
-- Whether a log replay's hold still owns the poison aggregate.
SELECT EXISTS (SELECT 1 FROM outbox_log_holds
               WHERE aggregate_type = @aggregate_type AND aggregate_id = @aggregate_id AND replay_gate IS NOT NULL);
