-- Statements of the outbox package, loaded by name (internal/namedsql).

-- name: EnqueueAggregate :many
-- Allocates cardinality($3) consecutive sequence numbers for one aggregate
-- (the upsert row-locks the aggregate until the transaction ends), inserts the
-- events with them in the given order, and queues a NOTIFY that PostgreSQL
-- delivers only if the transaction commits. One round trip.
WITH seq AS (
    INSERT INTO outbox_sequences AS s (aggregate_type, aggregate_id, last_sequence)
    VALUES ($1, $2, cardinality($3::uuid[]))
    ON CONFLICT (aggregate_type, aggregate_id)
    DO UPDATE SET last_sequence = s.last_sequence + EXCLUDED.last_sequence
    RETURNING last_sequence
), ins AS (
    INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence,
                               event_type, schema_version, payload)
    SELECT e.event_id, $1, $2, seq.last_sequence - cardinality($3::uuid[]) + e.ord,
           e.event_type, e.schema_version, e.payload
    FROM seq,
         unnest($3::uuid[], $4::text[], $5::int[], $6::jsonb[])
             WITH ORDINALITY AS e(event_id, event_type, schema_version, payload, ord)
    RETURNING event_id, aggregate_sequence, occurred_at
), wake AS (
    SELECT pg_notify('outbox_events', '') AS sent
)
SELECT ins.event_id, ins.aggregate_sequence, ins.occurred_at
FROM ins, wake
ORDER BY ins.aggregate_sequence;
