-- Statements of the CDC relay source (cdc.go), loaded and bound in sql.go
-- like the others. The stream never claims: it publishes what the log hands
-- it, marks it, and leaves anything unusual to its sweeper, a polling relay
-- whose claim (RelayClaim) narrows to the events the stream left.

-- name: CDCSort :many
-- Sorts one batch of events the stream received (@event_ids, one statement
-- per batch, never per event) and returns them as the table has them:
-- 'done' when already published or skipped (a re-streamed event after a
-- restart, or one the backfill took), 'sweeper' when the polling path owns
-- it (quarantined, retried, under a lease, replayed, or not yet available),
-- else 'stream'. blockers are the event's unpublished, unskipped
-- predecessors (the lane rule's outbox_unpublished_predecessors): the stream
-- publishes an event only when it holds every one of them itself, and hands
-- the event to the sweeper otherwise. An event cleanup already deleted is
-- not returned.
SELECT e.event_id, e.aggregate_type, e.aggregate_id, e.aggregate_sequence,
       e.event_type, e.schema_version, e.payload, e.occurred_at,
       CASE WHEN e.published_at IS NOT NULL OR e.skipped_at IS NOT NULL THEN 'done'
            WHEN e.quarantined_at IS NOT NULL
              OR e.attempt_count > 0
              OR e.claim_until >= now()
              OR e.replay_requested_at IS NOT NULL
              OR e.available_at > now() THEN 'sweeper'
            ELSE 'stream' END AS verdict,
       ARRAY(SELECT p.event_id
             FROM outbox_unpublished_predecessors(e.aggregate_type, e.aggregate_id, e.aggregate_sequence) p
            )::uuid[] AS blockers
FROM outbox_events e
WHERE e.event_id = ANY(@event_ids::uuid[]);

-- name: CDCMark :many
-- Marks the events @event_ids that the stream published. Not fenced by a
-- lease (the stream holds none): an event the sweeper published too keeps
-- its first mark, and the sweeper's later mark of it changes nothing. Only
-- published_at is written: claimed_by stays NULL on an event the stream
-- published (the stream claims nothing, and writing its name would grow
-- every row version this update writes to the WAL).
UPDATE outbox_events
SET published_at = now()
WHERE event_id = ANY(@event_ids::uuid[])
  AND published_at IS NULL
RETURNING event_id;

-- name: CDCTakeFailed :many
-- Takes the events @event_ids whose publish by the stream failed as a claim
-- of @owner (lease @lease_ms, an attempt counted, as RelayClaim counts it), so
-- that RelayFail records the failure exactly as for a polling relay: backoff
-- or quarantine. An event under another relay's live lease, or already
-- published, quarantined or skipped, is not taken: its outcome is not the
-- stream's to record.
UPDATE outbox_events
SET claimed_by    = @owner,
    claim_until   = now() + @lease_ms::bigint * interval '1 millisecond',
    attempt_count = attempt_count + 1
WHERE event_id = ANY(@event_ids::uuid[])
  AND published_at IS NULL
  AND quarantined_at IS NULL
  AND skipped_at IS NULL
  AND (claim_until IS NULL OR claim_until < now())
RETURNING event_id, attempt_count;

-- name: CDCWALLevel :one
-- The server's wal_level: the stream needs 'logical'.
SELECT current_setting('wal_level') AS wal_level;

-- name: CDCPublicationExists :one
SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = @publication);

-- name: CDCCreateSlot :one
-- Creates the stream's logical replication slot for the pgoutput plugin and
-- returns its consistent point: every transaction that commits after it is
-- streamed, and every one before it is visible to a backfill that starts
-- after this statement.
SELECT lsn::text FROM pg_create_logical_replication_slot(@slot_name, 'pgoutput');

-- name: CDCSlot :many
-- The slot @slot_name of this database, if it exists: whether a relay streams
-- it, how far its confirmed position trails the server's WAL (lag) and how
-- much WAL it holds back from recycling (retained, from its restart_lsn),
-- its wal_status ('lost' once max_slot_wal_keep_size removed WAL it needed)
-- and max_slot_wal_keep_size in bytes (-1: unlimited).
SELECT s.active,
       coalesce(s.confirmed_flush_lsn::text, '0/0') AS confirmed_flush_lsn,
       coalesce((pg_current_wal_lsn() - s.confirmed_flush_lsn)::bigint, 0) AS lag_bytes,
       coalesce((pg_current_wal_lsn() - s.restart_lsn)::bigint, 0) AS retained_bytes,
       coalesce(s.wal_status, '') AS wal_status,
       (SELECT CASE WHEN setting::bigint < 0 THEN -1 ELSE setting::bigint * 1024 * 1024 END
        FROM pg_settings WHERE name = 'max_slot_wal_keep_size') AS max_slot_wal_keep_size_bytes
FROM pg_replication_slots s
WHERE s.slot_name = @slot_name
  AND s.database = current_database();
