-- The outbox's schema (outflow_schema_version): the log relay source
-- (OUTFLOW_RELAY_SOURCE=log, issue 27; the protocol is model/log.pml, see
-- model/README.md "The log source"). Events enqueued for the log
-- (outbox.EnqueueConfig.Log) are rows of outbox_log, inserted and never
-- updated; the relay writes one cursor row per partition per batch, and a
-- hold only for an order in trouble. Nothing here changes what Enqueue
-- writes for the poll and cdc sources except outbox_sequences.last_gate.
-- Owned by package outbox (outboxops for the operator's commands).

-- +goose Up

-- The lane gate: the enqueue's sequence upsert stamps the order's row with
-- greatest(last_gate, the transaction's own xid), so along one order the
-- gate never decreases even when a later sequence is taken by a transaction
-- with an earlier xid. An xid8 as bigint (pg_current_xact_id()::text::bigint:
-- epoch-qualified, it never wraps). 0 for an order never enqueued to the log.
ALTER TABLE outbox_sequences ADD COLUMN last_gate bigint NOT NULL DEFAULT 0;

-- outbox_log_pos: the position of a log row, taken under the order's lane
-- lock, so an order's later event always has a later position.
CREATE SEQUENCE outbox_log_pos AS bigint;

-- outbox_log_partition: the relay partition of an order, a stable hash of
-- the aggregate over outbox_log_partitions (16, the rows of
-- outbox_log_cursors). IMMUTABLE and LANGUAGE sql, so it is inlined.
-- hashtextextended is the hash PostgreSQL's own hash partitioning keeps
-- stable across versions.
-- +goose StatementBegin
CREATE FUNCTION outbox_log_partition(agg_type text, agg_id text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ((hashtextextended(agg_type || '/' || agg_id, 0) % 16 + 16) % 16)::integer
$$;
-- +goose StatementEnd

-- outbox_log: the events, append-only. A row's key is (gate, pos): the
-- reader of a partition reads keys after its cursor whose gate is below its
-- snapshot's xmin (the horizon), so a row that becomes visible later can
-- never land behind the cursor. Range-partitioned by pos so that retention
-- detaches and drops whole partitions instead of deleting rows; this
-- migration creates only the default partition (creating range partitions
-- ahead of the sequence, and retention, are not built yet). event_id is not
-- unique across partitions (a partitioned table's unique keys must hold the
-- partition key); Enqueue gives every event a new UUIDv7 unless the caller
-- sets one.
CREATE TABLE outbox_log (
    pos                bigint      NOT NULL,
    gate               bigint      NOT NULL,
    partition          integer     NOT NULL,
    event_id           uuid        NOT NULL,
    aggregate_type     text        NOT NULL,
    aggregate_id       text        NOT NULL,
    aggregate_sequence bigint      NOT NULL CHECK (aggregate_sequence > 0),
    event_type         text        NOT NULL,
    schema_version     integer     NOT NULL CHECK (schema_version > 0),
    payload            jsonb       NOT NULL,
    occurred_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (pos)
) PARTITION BY RANGE (pos);

CREATE TABLE outbox_log_default PARTITION OF outbox_log DEFAULT;

-- The reader's scan: one partition, in key order after the cursor.
CREATE INDEX outbox_log_read_idx ON outbox_log (partition, gate, pos);

-- A hold's head: one order's events in key order.
CREATE INDEX outbox_log_lane_idx ON outbox_log (aggregate_type, aggregate_id, gate, pos);

-- outbox_log_cursors: one row per relay partition. (gate, pos) is the last
-- key the partition's reader passed; owner and lease_until are the
-- partition's lease; epoch moves with every change of the holds but the
-- advance's own, so a reader whose view of the holds is stale cannot
-- advance; tries counts the batches begun at this position that never
-- finished (0, 1, 2: the window shrinks, then the event is isolated).
CREATE TABLE outbox_log_cursors (
    partition   integer     PRIMARY KEY CHECK (partition >= 0 AND partition < 16),
    gate        bigint      NOT NULL DEFAULT 0,
    pos         bigint      NOT NULL DEFAULT 0,
    owner       text,
    lease_until timestamptz,
    epoch       bigint      NOT NULL DEFAULT 0,
    tries       integer     NOT NULL DEFAULT 0 CHECK (tries BETWEEN 0 AND 2),
    advanced_at timestamptz
);

INSERT INTO outbox_log_cursors (partition) SELECT generate_series(0, 15);

-- outbox_log_holds: at most one per order, for an order in trouble (a failed
-- or isolated event, an operator's replay). A hold owns every event of its
-- order with key >= (from_gate, from_pos), which is never after the key
-- just after its partition's cursor; the reader skips the order, the owner's
-- hold worker publishes its events in order and releases the hold once it
-- has caught up with the cursor. attempts counts the head's attempts
-- (OUTFLOW_MAX_ATTEMPTS); a quarantined hold waits for an operator. An
-- operator's replay makes a hold whose events up to (replay_gate,
-- replay_pos), the cursor when it was made, are delivered again (NULL: a
-- hold of a failed event).
CREATE TABLE outbox_log_holds (
    aggregate_type text        NOT NULL,
    aggregate_id   text        NOT NULL,
    partition      integer     NOT NULL REFERENCES outbox_log_cursors (partition),
    from_gate      bigint      NOT NULL,
    from_pos       bigint      NOT NULL,
    attempts       integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    available_at   timestamptz NOT NULL DEFAULT now(),
    quarantined_at timestamptz,
    last_error     text,
    replay_gate    bigint,
    replay_pos     bigint,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (aggregate_type, aggregate_id)
);

CREATE INDEX outbox_log_holds_partition_idx ON outbox_log_holds (partition, available_at);

-- outbox_log_skips: the audit of an operator's skip of a quarantined hold's
-- head (the event is never published), kept for good.
CREATE TABLE outbox_log_skips (
    event_id   uuid        NOT NULL,
    pos        bigint      NOT NULL,
    skipped_at timestamptz NOT NULL DEFAULT now(),
    skipped_by text        NOT NULL CHECK (skipped_by <> ''),
    reason     text,
    PRIMARY KEY (pos)
);

-- +goose Down
DROP TABLE outbox_log_skips;
DROP TABLE outbox_log_holds;
DROP TABLE outbox_log_cursors;
DROP TABLE outbox_log;
DROP FUNCTION outbox_log_partition(text, text);
DROP SEQUENCE outbox_log_pos;
ALTER TABLE outbox_sequences DROP COLUMN last_gate;
