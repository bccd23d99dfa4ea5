-- The outbox's schema (outflow_schema_version): an order's lane across
-- outbox_events and the log. While a database switches between the poll
-- (or cdc) source and the log, an order may have events in both tables,
-- and every relay keeps its sequence across them: the relays of
-- outbox_events (RelayClaim, RelayClaimVerify, the CDC stream's sort) take
-- an event only when no earlier event of its order is unpublished in the
-- log either, and the log's reader and hold worker (LogBatch, LogHoldNext)
-- publish a log event only when no earlier event of its order is
-- unpublished in outbox_events (outbox_unpublished_predecessors). Owned by
-- package outbox.

-- +goose Up

-- outbox_unpublished_log_predecessors: the unpublished events of the log
-- of the order (agg_type, agg_id) with a sequence below before_sequence
-- (sequences are the order's across both tables, outbox_sequences): those
-- after their partition's cursor, and those a hold owns (key >= its from).
-- An event an operator skipped is one a hold owns until the hold worker has
-- handed its tombstone to the sinks (migration 00016), so, as in
-- outbox_events, it holds its order back until then. Like outbox_unpublished_predecessors it
-- is a set-returning LANGUAGE sql STABLE function, so the planner inlines
-- it into the caller's EXISTS (through outbox_log_lane_idx) and it reads
-- the caller's snapshot; keep it so. An earlier event of the order is
-- committed before a later one is enqueued (the order's outbox_sequences
-- row is locked until COMMIT), so a statement that sees the later event
-- sees the earlier one too.
-- +goose StatementBegin
CREATE FUNCTION outbox_unpublished_log_predecessors(agg_type text, agg_id text, before_sequence bigint)
RETURNS TABLE (event_id uuid)
LANGUAGE sql STABLE
AS $$
    SELECT l.event_id
    FROM outbox_log l
    JOIN outbox_log_cursors c ON c.partition = l.partition
    LEFT JOIN outbox_log_holds h ON h.aggregate_type = l.aggregate_type AND h.aggregate_id = l.aggregate_id
    WHERE l.aggregate_type = agg_type
      AND l.aggregate_id = agg_id
      AND l.aggregate_sequence < before_sequence
      AND ((l.gate, l.pos) > (c.gate, c.pos) OR (l.gate, l.pos) >= (h.from_gate, h.from_pos))
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION outbox_unpublished_log_predecessors(text, text, bigint);
