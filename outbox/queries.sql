-- The write side's statements, loaded with the package's other .sql files
-- in sql.go, where each is bound to the Go structs of its named arguments
-- (@name) and of its result row.

-- name: EnqueueAggregate :many
-- Allocates cardinality(@event_ids) consecutive sequence numbers for the
-- aggregate @aggregate_type/@aggregate_id (the upsert row-locks the
-- aggregate until the transaction ends), inserts the events with them in the
-- given order (the arrays are parallel, one element per event), and queues a
-- NOTIFY that PostgreSQL delivers only if the transaction commits. One round
-- trip.
WITH seq AS (
    INSERT INTO outbox_sequences AS s (aggregate_type, aggregate_id, last_sequence)
    VALUES (@aggregate_type, @aggregate_id, cardinality(@event_ids::uuid[]))
    ON CONFLICT (aggregate_type, aggregate_id)
    DO UPDATE SET last_sequence = s.last_sequence + EXCLUDED.last_sequence
    RETURNING last_sequence
), ins AS (
    INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence,
                               event_type, schema_version, payload)
    SELECT e.event_id, @aggregate_type, @aggregate_id, seq.last_sequence - cardinality(@event_ids::uuid[]) + e.ord,
           e.event_type, e.schema_version, e.payload
    FROM seq,
         unnest(@event_ids::uuid[], @event_types::text[], @schema_versions::int[], @payloads::jsonb[])
             WITH ORDINALITY AS e(event_id, event_type, schema_version, payload, ord)
    RETURNING event_id, aggregate_sequence, occurred_at
), wake AS (
    SELECT pg_notify('outbox_events', '') AS sent
)
SELECT ins.event_id, ins.aggregate_sequence, ins.occurred_at
FROM ins, wake
ORDER BY ins.aggregate_sequence;
