-- The outbox's schema (outflow_schema_version): the relays whose circuit
-- breaker on their sink is open, so an operator sees a sink outage where
-- they see the backlog (outboxctl status, the console) and not only in a
-- relay's outbox_sink_up gauge. Owned by package outbox.

-- +goose Up

-- outbox_sink_breakers: one row per relay (its owner) while its breaker
-- is open: written when the relay starts probing the sink, renewed by each
-- probe that fails (probed_at, probes, the sink's last error), deleted when
-- a probe succeeds and the relay claims again, or when it stops. A row
-- whose probed_at is old is a relay that died with its breaker open: the
-- status reports it as stale, and the next breaker to open deletes rows an
-- hour old. Written only when a breaker changes state or probes, never per
-- event.
CREATE TABLE outbox_sink_breakers (
    owner      text        PRIMARY KEY CHECK (owner <> ''),
    opened_at  timestamptz NOT NULL,
    probed_at  timestamptz NOT NULL,
    probes     integer     NOT NULL DEFAULT 0,
    last_error text
);

-- +goose Down
DROP TABLE outbox_sink_breakers;
