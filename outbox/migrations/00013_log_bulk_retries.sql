-- The outbox's schema (outflow_schema_version): the audit of a bulk retry
-- (outboxctl retry --quarantined, outboxops.RetryQuarantined) counts the log
-- source's quarantined holds it retried beside its outbox_events, so a bulk
-- retry's audit row says all it did whichever relay source the database
-- uses. Owned by package outbox/outboxops.

-- +goose Up

-- log_holds: the log source's quarantined holds (outbox_log_holds) the bulk
-- retry took out of quarantine, after its events; 0 for a retry before this
-- migration or of a database without log holds.
ALTER TABLE outbox_bulk_retries ADD COLUMN log_holds bigint NOT NULL DEFAULT 0 CHECK (log_holds >= 0);

-- +goose Down
ALTER TABLE outbox_bulk_retries DROP COLUMN log_holds;
