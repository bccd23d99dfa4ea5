-- Read-only lookups of outbox rows for other packages (lookup.go), so that
-- nothing outside package outbox reads outbox_events: the rows are this
-- package's, and retention cleanup deletes them. Bound in sql.go like every
-- other statement of the package.

-- name: LookupEventSequence :one
-- A statement of its own, so under READ COMMITTED it takes a new snapshot:
-- run after a row lock was waited for, it sees what the lock holder
-- committed meanwhile.
SELECT aggregate_sequence
FROM outbox_events
WHERE event_id = @event_id;

-- name: LookupAggregateEvents :many
-- The aggregate's events in outbox_events (served by the unique
-- (aggregate_type, aggregate_id, aggregate_sequence) index) and in the log
-- (the log source's, served by outbox_log_lane_idx). A log event has no
-- publish time of its own: once its partition's cursor passed it and no
-- hold of its order covers it (nor a skip), published_at is the time the
-- cursor last moved, an approximation.
SELECT event_id, event_type, aggregate_sequence, occurred_at, published_at
FROM outbox_events
WHERE aggregate_type = @aggregate_type AND aggregate_id = @aggregate_id
UNION ALL
SELECT l.event_id, l.event_type, l.aggregate_sequence, l.occurred_at,
       CASE WHEN (l.gate, l.pos) <= (c.gate, c.pos) AND h.aggregate_id IS NULL AND s.event_id IS NULL
            THEN coalesce(c.advanced_at, l.occurred_at) END AS published_at
FROM outbox_log l
JOIN outbox_log_cursors c ON c.partition = l.partition
LEFT JOIN outbox_log_holds h ON h.aggregate_type = l.aggregate_type AND h.aggregate_id = l.aggregate_id
                            AND (l.gate, l.pos) >= (h.from_gate, h.from_pos)
LEFT JOIN outbox_log_skips s ON s.event_id = l.event_id
WHERE l.aggregate_type = @aggregate_type AND l.aggregate_id = @aggregate_id
ORDER BY aggregate_sequence;
