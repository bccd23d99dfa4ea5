-- The outbox's schema (outflow_schema_version): the log source's relays
-- share its partitions evenly (outbox_log_relays, read and written by
-- LogRelay, log_share.go), and an event id is found in the log by an index
-- instead of a scan (outboxctl show, the lookup by event id). Owned by
-- package outbox.

-- +goose Up

-- outbox_log_relays: the log relays that are running, one row per relay
-- (its owner name, unique per process start), renewed with every look for
-- free partitions until seen_until, the relay's lease from then; a row
-- past it is a relay that died or stalled, ignored and deleted by the next
-- relay that looks. max_partitions is the relay's LogConfig.MaxPartitions.
-- A relay's share of the sixteen partitions follows from the live rows:
-- each of n relays holds 16/n, the first 16 mod n by owner one more.
CREATE TABLE outbox_log_relays (
    owner          text        PRIMARY KEY CHECK (owner <> ''),
    max_partitions integer     NOT NULL CHECK (max_partitions BETWEEN 1 AND 16),
    seen_until     timestamptz NOT NULL
);

-- An event by its id (LogOpEvents, outboxctl show): non-unique, as the
-- table's unique keys must hold its partition key pos. Created on the
-- parent, so every range partition has it.
CREATE INDEX outbox_log_event_idx ON outbox_log (event_id);

-- +goose Down
DROP INDEX outbox_log_event_idx;
DROP TABLE outbox_log_relays;
