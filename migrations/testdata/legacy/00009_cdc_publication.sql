-- The publication the CDC relay source streams (OUTFLOW_RELAY_SOURCE=cdc):
-- inserts into outbox_events only, since an event is immutable once written
-- and the relay's own updates (claims, marks) must not come back to it.
-- CREATE PUBLICATION works under any wal_level; streaming it needs
-- wal_level=logical, which the relay checks at start.

-- +goose Up
CREATE PUBLICATION outflow_outbox FOR TABLE outbox_events WITH (publish = 'insert');

-- +goose Down
DROP PUBLICATION outflow_outbox;
