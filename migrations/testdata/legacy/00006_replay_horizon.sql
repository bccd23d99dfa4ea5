-- +goose Up

-- outbox_replay_horizon remembers how long the Temporal namespace keeps a
-- closed workflow, as the starter last recorded it at start-up. A replayed
-- event is recognised by its workflow (a completed one refuses the second
-- start); once the namespace has forgotten that workflow, a replay starts a
-- brand-new run. So a replay whose window starts before now() minus this
-- horizon is refused. One row; none until a starter records it.
CREATE TABLE outbox_replay_horizon (
    singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    horizon_ms  bigint      NOT NULL CHECK (horizon_ms > 0),
    reason      text        NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);

-- The lane rule's one definition: the unpublished, unskipped events of an
-- aggregate before a sequence, any of which holds an event back (a
-- quarantined predecessor too; an operator-skipped one does not). The relay's
-- claim and its verification, and the operator's list and lock, all use it.
-- It is a set-returning LANGUAGE sql function, STABLE and not STRICT, so the
-- planner inlines it into the calling statement: EXISTS (SELECT 1 FROM
-- outbox_unpublished_predecessors(...)) is planned exactly like the subquery
-- written out, through outbox_pending_lane_idx, and reads the caller's
-- snapshot. (A boolean function wrapping EXISTS would not be inlined: it
-- would run as an opaque call per candidate row.) Keep it STABLE, not
-- STRICT, without SET options or SECURITY DEFINER, or inlining stops.
-- +goose StatementBegin
CREATE FUNCTION outbox_unpublished_predecessors(agg_type text, agg_id text, before_sequence bigint)
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

-- +goose Down
DROP FUNCTION outbox_unpublished_predecessors(text, text, bigint);
DROP TABLE outbox_replay_horizon;
