-- Statements of the peers bench itself, bound to their Go types in sql.go
-- (outbox/namedsql).
-- They read the server's statistics; the contenders' own SQL is theirs.

-- name: WALPosition :one
-- The server's WAL insert position in bytes. It is server-wide: other
-- sessions' writes in the same window count too.
SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint;

-- name: OtherClients :one
-- Client connections to this database besides this one. A backend flushes
-- its table statistics when it exits, so once none is left the counters
-- below include all their work.
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend';

-- name: ClearStatsSnapshot :exec
SELECT pg_stat_clear_snapshot();

-- name: TupleChurn :one
-- Row versions made dead in this database since it was created: every
-- UPDATE and DELETE leaves one, whether or not vacuum has removed it since
-- (n_dead_tup would drop when autovacuum runs mid-measurement).
SELECT coalesce(sum(n_tup_upd + n_tup_del), 0)::bigint FROM pg_stat_user_tables;

-- name: OutflowPending :one
-- outflow: events not yet marked published by the relay.
SELECT count(*) FROM outbox_events WHERE published_at IS NULL;

-- name: OutflowLogPending :one
-- outflow_log: log events after their partition's cursor (not yet passed by
-- the partition's reader), plus orders under a hold (none unless a publish
-- failed).
SELECT (SELECT count(*)
        FROM outbox_log_cursors AS c
        JOIN outbox_log AS l ON l.partition = c.partition AND (l.gate, l.pos) > (c.gate, c.pos))
     + (SELECT count(*) FROM outbox_log_holds);

-- name: RiverPending :one
-- River: jobs not yet recorded as completed.
SELECT count(*) FROM river_job WHERE state <> 'completed';

-- name: WatermillPending :one
-- Watermill: messages past the consumer group's acked offset, in the
-- subscriber's own order (transaction id, then offset).
SELECT count(*)
FROM watermill_order_events AS m, watermill_offsets_order_events AS o
WHERE o.consumer_group = ''
  AND (m.transaction_id > o.last_processed_transaction_id
       OR (m.transaction_id = o.last_processed_transaction_id AND m."offset" > o.offset_acked));

-- name: WatermillForwarderPending :one
-- Watermill's forwarder (the JetStream phase): envelopes on the forwarder's
-- topic past the consumer group's acked offset, as WatermillPending.
SELECT count(*)
FROM watermill_order_events_forwarder AS m, watermill_offsets_order_events_forwarder AS o
WHERE o.consumer_group = ''
  AND (m.transaction_id > o.last_processed_transaction_id
       OR (m.transaction_id = o.last_processed_transaction_id AND m."offset" > o.offset_acked));

-- name: DBOSPending :one
-- DBOS: order-event workflows not yet finished (enqueued, or dequeued and
-- running): a restart runs them (again).
SELECT count(*) FROM dbos.workflow_status WHERE status <> 'SUCCESS';

-- name: Analyze :exec
-- After seeding a backlog: statistics as autovacuum would have gathered on
-- a live table, so no contender is measured with a plan chosen blind.
ANALYZE;

-- name: TransactionID :one
-- The overlapping-transactions round: the calling transaction's xid,
-- assigned now if it has none yet (an xid8 as bigint).
SELECT pg_current_xact_id()::text::bigint;

-- name: PostmasterStart :one
-- The crash round: when the restarted server's postmaster started, the
-- earliest a contender could reach it again.
SELECT pg_postmaster_start_time();

-- name: DropSlot :exec
-- outflow_cdc's slot, once its relay stopped.
SELECT pg_drop_replication_slot(@slot);

-- name: QueueTables :one
-- The held-horizon round: dead row versions (n_dead_tup) and total size
-- (heap, indexes and TOAST) of the contender's own queue/outbox tables,
-- named by LIKE patterns on schema.table (Contender.Tables).
SELECT coalesce(sum(n_dead_tup), 0)::bigint AS dead_tuples,
       coalesce(sum(pg_total_relation_size(relid)), 0)::bigint AS table_bytes
FROM pg_stat_user_tables
WHERE schemaname || '.' || relname LIKE ANY (@tables::text[]);
