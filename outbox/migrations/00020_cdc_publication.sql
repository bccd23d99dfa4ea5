-- The outbox's schema (outflow_schema_version): the publication the cdc
-- relay source streams. Owned by package outbox.

-- +goose Up

-- outflow_outbox: inserts into outbox_events only, since an event is
-- immutable once written and the relay's own updates (claims, marks) must
-- not come back to it. A publication costs nothing until a replication
-- slot streams it, and CREATE PUBLICATION works under any wal_level, so
-- every outbox database has it and a switch to the cdc source
-- (`outboxctl source set cdc`) needs no step of its own; streaming it needs
-- wal_level=logical, which the switch and the relay check. A database
-- that already has it (outflow's migration 00009, before the outbox had a
-- schema of its own, or an earlier outbox.MigrateCDC) keeps it.
-- +goose StatementBegin
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'outflow_outbox') THEN
    CREATE PUBLICATION outflow_outbox FOR TABLE outbox_events WITH (publish = 'insert');
  END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP PUBLICATION IF EXISTS outflow_outbox;
