-- Statements of the benchmark itself, bound to their Go types in sql.go
-- (outbox/namedsql).
-- They only ever run on the bench's own scratch databases. The relay's
-- statements come from outbox/outboxtest/outboxbench, the order insert from
-- orders.SQL, so the bench measures exactly the SQL the product sends.

-- name: SeedPending :exec
-- Writes @events unpublished events over @aggregates aggregates, as a live
-- producer would have: event g is sequence g/@aggregates+1 of aggregate
-- g%@aggregates, and occurred_at and
-- available_at grow with g (one microsecond apart, in the past).
INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence,
                           event_type, schema_version, payload, occurred_at, available_at)
SELECT gen_random_uuid(), 'bench', 'p' || (g % @aggregates::int), g / @aggregates::int + 1, 'BenchEvent', 1,
       jsonb_build_object('order_id', 'p' || (g % @aggregates::int), 'amount', 2500, 'currency', 'usd'),
       t.base + g * interval '1 microsecond', t.base + g * interval '1 microsecond'
FROM generate_series(0, @events::int - 1) AS g,
     (SELECT now() - interval '1 hour' AS base) AS t;

-- name: SeedLog :exec
-- SeedPending for the log source (outbox_log): the same events, in one
-- transaction, each in its aggregate's partition with the transaction's
-- xid as its gate, positions in sequence order.
INSERT INTO outbox_log (pos, gate, partition, event_id, aggregate_type, aggregate_id, aggregate_sequence,
                        event_type, schema_version, payload, occurred_at)
SELECT nextval('outbox_log_pos'), pg_current_xact_id()::text::bigint,
       outbox_log_partition('bench', 'p' || (g % @aggregates::int)),
       gen_random_uuid(), 'bench', 'p' || (g % @aggregates::int), g / @aggregates::int + 1, 'BenchEvent', 1,
       jsonb_build_object('order_id', 'p' || (g % @aggregates::int), 'amount', 2500, 'currency', 'usd'),
       t.base + g * interval '1 microsecond'
FROM generate_series(0, @events::int - 1) AS g,
     (SELECT now() - interval '1 hour' AS base) AS t
ORDER BY g;

-- name: SeedPublished :exec
-- Writes @events events that a relay published long ago: the table's history.
INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence,
                           event_type, schema_version, payload, occurred_at, available_at,
                           claimed_by, published_at, attempt_count)
SELECT gen_random_uuid(), 'bench', 'h' || g, 1, 'BenchEvent', 1,
       jsonb_build_object('order_id', 'h' || g, 'amount', 2500, 'currency', 'usd'),
       t.base + g * interval '1 microsecond', t.base + g * interval '1 microsecond',
       'bench-history', t.base + g * interval '1 microsecond' + interval '20 milliseconds', 1
FROM generate_series(0, @events::int - 1) AS g,
     (SELECT now() - interval '30 days' AS base) AS t;

-- name: AnalyzeOutbox :exec
ANALYZE outbox_events;

-- name: VacuumScratch :exec
-- The seed's aftermath before a timed phase: vacuums and analyzes every
-- table of the scratch database (autovacuum would do it for the seed's
-- inserts in the middle of the timed phase otherwise).
VACUUM (ANALYZE);

-- name: Checkpoint :exec
-- Writes the seed's dirty pages now, not during the timed phase (needs a
-- superuser or pg_checkpoint).
CHECKPOINT;

-- name: TruncateOutbox :exec
TRUNCATE outbox_events, outbox_sequences;

-- name: BackendPID :one
-- The process of the connection's backend, to place it beside the bench's.
SELECT pg_backend_pid();

-- name: CountPending :one
-- Served by the partial index over unpublished rows.
SELECT count(*) FROM outbox_events WHERE published_at IS NULL;

-- name: CountLogPending :one
-- The log's events after their partition's cursor (or under a hold).
SELECT (SELECT count(*)
        FROM outbox_log_cursors c
        JOIN outbox_log l ON l.partition = c.partition AND (l.gate, l.pos) > (c.gate, c.pos))
     + (SELECT count(*) FROM outbox_log_holds);

-- name: DatabaseTransactions :one
-- Transactions the server has counted for database @database (every autocommit
-- statement is one). Run from a connection to another database, so the
-- reading does not count itself.
SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = @database;

-- name: DropSlot :exec
SELECT pg_drop_replication_slot(@slot);

-- name: Notify :exec
-- SeedPending writes rows without Enqueue's NOTIFY; this wakes a polling relay.
SELECT pg_notify('outbox_events', '');

-- name: NotifyLog :exec
-- SeedLog writes rows without Enqueue's NOTIFY; this wakes every reader of
-- a log relay.
SELECT pg_notify('outbox_log', '');

-- name: SlotPassed :one
-- Whether slot @slot has confirmed every transaction before WAL position @lsn.
SELECT confirmed_flush_lsn >= @lsn::pg_lsn FROM pg_replication_slots WHERE slot_name = @slot;

-- name: CurrentWAL :one
SELECT pg_current_wal_lsn()::text;

-- name: OutboxTupleChanges :one
-- Row versions made dead in outbox_events so far: every update and delete
-- leaves one.
SELECT n_tup_upd + n_tup_del FROM pg_stat_user_tables WHERE relname = 'outbox_events';

-- name: LogTupleChanges :one
-- OutboxTupleChanges for the log source: what it writes is the partitions'
-- cursor rows and the holds (and never a row of the log).
SELECT coalesce(sum(n_tup_upd + n_tup_del), 0)::bigint
FROM pg_stat_user_tables
WHERE relname IN ('outbox_log_cursors', 'outbox_log_holds', 'outbox_log_relays', 'outbox_log_default');

-- name: SeedTraceContexts :exec
-- Gives every unpublished event a W3C trace context, as Enqueue records
-- one inside a traced request: a traceparent whose trace id is derived from
-- the event id, sampled (flags 01) for a fraction @sampled of them, as a
-- request's sampler decided.
UPDATE outbox_events
SET trace_context = jsonb_build_object('traceparent',
        '00-' || md5(event_id::text) || '-' || substr(md5(aggregate_id), 1, 16) || '-' ||
        CASE WHEN random() < @sampled::float8 THEN '01' ELSE '00' END)
WHERE published_at IS NULL;
