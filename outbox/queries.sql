-- The write side's statements, loaded with the package's other .sql files
-- in sql.go, where each is bound to the Go structs of its named arguments
-- (@name) and of its result row.

-- name: EnqueueAggregate :many
-- Writes the events of the aggregate @aggregate_type/@aggregate_id where the
-- database's relay source says (outbox_source, migration 00018): to
-- outbox_events for poll and cdc, to the append-only log for log, so
-- producers never need to know the source. Allocates cardinality(@event_ids)
-- consecutive sequence numbers (the upsert row-locks the aggregate until
-- the transaction ends), inserts the events with them in the given order
-- (the arrays are parallel, one element per event), and queues a NOTIFY
-- that PostgreSQL delivers only if the transaction commits. One round trip.
-- @trace_contexts is the events' trace contexts (migration 00019), empty
-- when none has one: unnest pads the shorter array with NULLs.
-- For the log the upsert also stamps the lane gate and each event gets its
-- partition and a position, exactly as EnqueueLogAggregate below, which
-- explains why; for outbox_events the gate is left as it is (0 never
-- raises it). Only the branch the source selects inserts: the other's
-- WHERE filters every row before its nextval is evaluated. A transaction
-- that read the source before an operator changed it writes where it read;
-- every relay sweeps both tables, in each order's sequence (00017).
WITH src AS (
    SELECT coalesce((SELECT source = 'log' FROM outbox_source), false) AS log
), seq AS (
    INSERT INTO outbox_sequences AS s (aggregate_type, aggregate_id, last_sequence, last_gate)
    SELECT @aggregate_type, @aggregate_id, cardinality(@event_ids::uuid[]),
           CASE WHEN src.log THEN pg_current_xact_id()::text::bigint ELSE 0 END
    FROM src
    ON CONFLICT (aggregate_type, aggregate_id)
    DO UPDATE SET last_sequence = s.last_sequence + EXCLUDED.last_sequence,
                  last_gate     = greatest(s.last_gate, EXCLUDED.last_gate)
    RETURNING last_sequence, last_gate
), ins AS (
    INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence,
                               event_type, schema_version, payload, trace_context)
    SELECT e.event_id, @aggregate_type, @aggregate_id, seq.last_sequence - cardinality(@event_ids::uuid[]) + e.ord,
           e.event_type, e.schema_version, e.payload, e.trace_context
    FROM src, seq,
         unnest(@event_ids::uuid[], @event_types::text[], @schema_versions::int[], @payloads::jsonb[],
                @trace_contexts::jsonb[])
             WITH ORDINALITY AS e(event_id, event_type, schema_version, payload, trace_context, ord)
    WHERE NOT src.log
    RETURNING event_id, aggregate_sequence, occurred_at
), ins_log AS (
    INSERT INTO outbox_log (pos, gate, partition, event_id, aggregate_type, aggregate_id, aggregate_sequence,
                            event_type, schema_version, payload, trace_context)
    SELECT nextval('outbox_log_pos'), seq.last_gate, outbox_log_partition(@aggregate_type, @aggregate_id),
           e.event_id, @aggregate_type, @aggregate_id, seq.last_sequence - cardinality(@event_ids::uuid[]) + e.ord,
           e.event_type, e.schema_version, e.payload, e.trace_context
    FROM src, seq,
         unnest(@event_ids::uuid[], @event_types::text[], @schema_versions::int[], @payloads::jsonb[],
                @trace_contexts::jsonb[])
             WITH ORDINALITY AS e(event_id, event_type, schema_version, payload, trace_context, ord)
    WHERE src.log
    RETURNING event_id, aggregate_sequence, occurred_at
), wake AS (
    SELECT CASE WHEN src.log THEN pg_notify('outbox_log', outbox_log_partition(@aggregate_type, @aggregate_id)::text)
                ELSE pg_notify('outbox_events', '') END AS sent
    FROM src
), written AS (
    SELECT * FROM ins UNION ALL SELECT * FROM ins_log
)
SELECT written.event_id, written.aggregate_sequence, written.occurred_at
FROM written, wake
ORDER BY written.aggregate_sequence;

-- name: EnqueueLogAggregate :many
-- EnqueueAggregate's log branch alone, whatever the source (the
-- EnqueueConfig.Log; model/log.pml's
-- enqueue, statements 1 and 2): the same upsert of the aggregate's
-- outbox_sequences row, which row-locks the aggregate until the transaction
-- ends, also stamps the lane gate, greatest(last_gate, the transaction's own
-- xid): never the own xid alone, or a later sequence taken by a transaction
-- with an earlier xid would sort before its predecessor (the model's mutant
-- log_gate_own_xid, Watermill's [2 1]). pg_current_xact_id() gives the
-- transaction its xid if it has none yet, before the lock. The events are
-- inserted into outbox_log with that gate, their partition and a position
-- from outbox_log_pos taken in sequence order (unnest keeps the arrays'
-- order), and never updated afterwards. The NOTIFY on outbox_log names the
-- partition, so a relay wakes only that partition's reader. One round trip.
WITH seq AS (
    INSERT INTO outbox_sequences AS s (aggregate_type, aggregate_id, last_sequence, last_gate)
    VALUES (@aggregate_type, @aggregate_id, cardinality(@event_ids::uuid[]), pg_current_xact_id()::text::bigint)
    ON CONFLICT (aggregate_type, aggregate_id)
    DO UPDATE SET last_sequence = s.last_sequence + EXCLUDED.last_sequence,
                  last_gate     = greatest(s.last_gate, EXCLUDED.last_gate)
    RETURNING last_sequence, last_gate
), ins AS (
    INSERT INTO outbox_log (pos, gate, partition, event_id, aggregate_type, aggregate_id, aggregate_sequence,
                            event_type, schema_version, payload, trace_context)
    SELECT nextval('outbox_log_pos'), seq.last_gate, outbox_log_partition(@aggregate_type, @aggregate_id),
           e.event_id, @aggregate_type, @aggregate_id, seq.last_sequence - cardinality(@event_ids::uuid[]) + e.ord,
           e.event_type, e.schema_version, e.payload, e.trace_context
    FROM seq,
         unnest(@event_ids::uuid[], @event_types::text[], @schema_versions::int[], @payloads::jsonb[],
                @trace_contexts::jsonb[])
             WITH ORDINALITY AS e(event_id, event_type, schema_version, payload, trace_context, ord)
    RETURNING event_id, aggregate_sequence, occurred_at
), wake AS (
    SELECT pg_notify('outbox_log', outbox_log_partition(@aggregate_type, @aggregate_id)::text) AS sent
)
SELECT ins.event_id, ins.aggregate_sequence, ins.occurred_at
FROM ins, wake
ORDER BY ins.aggregate_sequence;

-- name: RelaySource :one
-- The database's relay source (outbox_source, migration 00018), which a
-- Relay follows; poll when the row is missing.
SELECT coalesce((SELECT source FROM outbox_source), 'poll') AS source;
