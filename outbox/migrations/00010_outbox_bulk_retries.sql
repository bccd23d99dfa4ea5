-- The outbox's schema (outflow_schema_version), outflow's migration 00010 as
-- it was: outbox_bulk_retries is written only by package outbox
-- (RetryQuarantined), so the audit goes wherever the outbox goes.

-- +goose Up

-- outbox_bulk_retries: the audit of `outboxctl retry --quarantined`
-- (outbox.RetryQuarantined), one row per bulk retry, kept for good. It
-- records who asked and why, the filter as given, and how many events the
-- committed batches retried: the row is written before the first batch, each
-- batch adds its count in the batch's own transaction, and finished_at is
-- set after the last one, so a retry cut short (a crash, Ctrl-C) leaves a row
-- whose events is exactly what was retried and whose finished_at is NULL.
-- Only events quarantined at or before started_at are retried (an event that
-- fails again during the retry stays quarantined), so started_at and the
-- filter say which events the retry selected. Owned by package outbox.
--
--   quarantined_since  --since: only events quarantined at or after it; NULL: any
--   error_contains     --error-contains: last_error contains it, ignoring case; '' any
--   aggregate_type     --aggregate-type: only aggregates of this type; '' any
CREATE TABLE outbox_bulk_retries (
    id                bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    started_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz,
    retried_by        text        NOT NULL CHECK (retried_by <> ''),
    reason            text,
    quarantined_since timestamptz,
    error_contains    text        NOT NULL DEFAULT '',
    aggregate_type    text        NOT NULL DEFAULT '',
    events            bigint      NOT NULL DEFAULT 0 CHECK (events >= 0)
);

-- The bulk retry walks quarantined events oldest quarantine first; without
-- this index each batch would scan every unpublished row.
CREATE INDEX outbox_quarantined_idx
    ON outbox_events (quarantined_at, event_id)
    WHERE quarantined_at IS NOT NULL AND published_at IS NULL AND skipped_at IS NULL;

-- +goose Down
DROP INDEX outbox_quarantined_idx;
DROP TABLE outbox_bulk_retries;
