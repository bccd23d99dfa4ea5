-- The outbox's schema (outflow_schema_version): an operator's skip is
-- delivered as a tombstone in its aggregate's lane, so that a consumer
-- that applies an aggregate's events in sequence (inbox/natsconsumer) sees
-- the skip rather than a gap it waits on for ever. Owned by package outbox.

-- +goose Up

-- skip_published_at: when the relay handed a skipped event's tombstone to
-- the sinks that take one (outbox.SkipPublisher; none for Temporal). Until
-- then the skipped event is the relay's to claim, as a tombstone, and
-- still holds its aggregate's later events back, so the tombstone comes
-- before them. A skip made before this migration has none yet: its
-- tombstone is published once, after the upgrade, which releases a
-- consumer stalled on it.
ALTER TABLE outbox_events ADD COLUMN skip_published_at timestamptz;

-- The lane rule (see 00006): an unpublished predecessor holds an event
-- back unless an operator skipped it and its tombstone is out.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox_unpublished_predecessors(agg_type text, agg_id text, before_sequence bigint)
RETURNS TABLE (event_id uuid)
LANGUAGE sql STABLE
AS $$
    SELECT p.event_id
    FROM outbox_events p
    WHERE p.aggregate_type = agg_type
      AND p.aggregate_id = agg_id
      AND p.aggregate_sequence < before_sequence
      AND p.published_at IS NULL
      AND (p.skipped_at IS NULL OR p.skip_published_at IS NULL)
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox_unpublished_predecessors(agg_type text, agg_id text, before_sequence bigint)
RETURNS TABLE (event_id uuid)
LANGUAGE sql STABLE
AS $$
    SELECT p.event_id
    FROM outbox_events p
    WHERE p.aggregate_type = agg_type
      AND p.aggregate_id = agg_id
      AND p.aggregate_sequence < before_sequence
      AND p.published_at IS NULL
      AND p.skipped_at IS NULL
$$;
-- +goose StatementEnd
ALTER TABLE outbox_events DROP COLUMN skip_published_at;
