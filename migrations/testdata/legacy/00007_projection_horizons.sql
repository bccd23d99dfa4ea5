-- +goose Up

-- The order projection must settle an order's stream from the orders row
-- alone: retention cleanup deletes outbox_events rows, and an operator's
-- skip leaves a sequence no workflow will ever apply.

-- created_sequence is the aggregate_sequence of the order's OrderCreated
-- event, so a projection step that only knows the event's id (a late cancel
-- closing the saga's event) finds its place after cleanup. Every order's
-- first event is sequence 1, hence the default: adding a NOT NULL column
-- with a constant default rewrites nothing, and the backfill below touches
-- only the rows it corrects (none, in practice). An order whose event is
-- already gone keeps 1.
ALTER TABLE orders ADD COLUMN created_sequence bigint NOT NULL DEFAULT 1;

UPDATE orders o
SET created_sequence = e.aggregate_sequence
FROM outbox_events e
WHERE e.event_id = o.created_event_id
  AND e.aggregate_sequence <> o.created_sequence;

-- skipped_sequences are the sequences of the order's events an operator gave
-- up (outboxctl skip). No step will ever apply them, so the projection counts
-- them as applied as soon as they follow applied_sequence directly, or the
-- order's later events would wait for them forever.
ALTER TABLE orders ADD COLUMN skipped_sequences bigint[] NOT NULL DEFAULT '{}';

-- orders_settled_through is the position of an order's stream once the
-- skipped sequences that directly follow applied are counted as applied:
-- the first sequence after applied that was not skipped, minus one. At most
-- cardinality(skipped) sequences can be skipped, so the series always holds
-- one that was not. Both writers of applied_sequence (the skip and the
-- projection) go through it, so the rule has one definition.
-- +goose StatementBegin
CREATE FUNCTION orders_settled_through(applied bigint, skipped bigint[]) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT min(g) - 1
    FROM generate_series(applied + 1, applied + cardinality(skipped) + 1) AS g
    WHERE g <> ALL (skipped)
$$;
-- +goose StatementEnd

-- Orders stalled behind events skipped before this migration flow again.
UPDATE orders o
SET skipped_sequences = s.sequences,
    applied_sequence  = orders_settled_through(o.applied_sequence, s.sequences)
FROM (
    SELECT aggregate_id, array_agg(aggregate_sequence ORDER BY aggregate_sequence) AS sequences
    FROM outbox_events
    WHERE aggregate_type = 'order' AND skipped_at IS NOT NULL
    GROUP BY aggregate_id
) s
WHERE o.id::text = s.aggregate_id;

-- +goose Down
DROP FUNCTION orders_settled_through(bigint, bigint[]);
ALTER TABLE orders DROP COLUMN skipped_sequences;
ALTER TABLE orders DROP COLUMN created_sequence;
