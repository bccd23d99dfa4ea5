-- The outbox's schema (outflow_schema_version): the relay's source is
-- recorded in the database, not in each process's environment. Producers
-- (outbox.Enqueue) write where it says, the relays follow it without a
-- restart, and an operator changes it with `outboxctl source set`. Owned
-- by package outbox.

-- +goose Up

-- outbox_source: one row. source is where producers write and which
-- relay reads first: poll and cdc read outbox_events (by claims, or by
-- logical replication), log reads the append-only log outbox_log. A
-- change takes effect at once for the next enqueue; a transaction that
-- read the old value and commits after the change writes where it read,
-- and that event is still published, in sequence: every relay sweeps the
-- other table too, and an order's lane runs across both (00017).
CREATE TABLE outbox_source (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    source     text NOT NULL DEFAULT 'poll' CHECK (source IN ('poll', 'cdc', 'log')),
    changed_at timestamptz NOT NULL DEFAULT now(),
    changed_by text NOT NULL DEFAULT 'migration',
    reason     text NOT NULL DEFAULT ''
);
INSERT INTO outbox_source DEFAULT VALUES;

-- +goose Down
DROP TABLE outbox_source;
