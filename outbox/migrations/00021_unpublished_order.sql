-- The outbox's schema (outflow_schema_version): the order operators list
-- unpublished events in. Owned by package outbox; read by outboxops.List
-- (`outboxctl list`, the console's pages).

-- +goose Up

-- The pending, held, quarantined and skipped lists walk unpublished events
-- oldest first (OpsList) and stop at a page: without this index each page
-- sorts every unpublished row, and the held list also asks each of them
-- whether a predecessor holds it back (184 ms at p50 for 27,500 unpublished
-- rows in 1,000,000). One narrow key, and only while an event is
-- unpublished: an enqueue adds one small index entry, a publish none.
CREATE INDEX outbox_unpublished_occurred_idx
    ON outbox_events (occurred_at)
    WHERE published_at IS NULL;

-- +goose Down
DROP INDEX outbox_unpublished_occurred_idx;
