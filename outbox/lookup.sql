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
-- Served by the unique (aggregate_type, aggregate_id, aggregate_sequence) index.
SELECT event_id, event_type, aggregate_sequence, occurred_at, published_at
FROM outbox_events
WHERE aggregate_type = @aggregate_type AND aggregate_id = @aggregate_id
ORDER BY aggregate_sequence;
