-- +goose Up
-- Leave room on every page of outbox_events for the relay's claim UPDATE
-- (claimed_by, claim_until, attempt_count: no indexed column), so PostgreSQL
-- can update the row in place (a HOT update) instead of adding an entry to
-- each of the table's indexes. Without it the claim's cost grows with the
-- size of those indexes, i.e. with the table's history. Existing pages keep
-- their layout until rewritten (VACUUM FULL or pg_repack).
ALTER TABLE outbox_events SET (fillfactor = 70);

-- +goose Down
ALTER TABLE outbox_events RESET (fillfactor);
