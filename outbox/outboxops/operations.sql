-- Statements of the operator's commands (Status, List, Retry, Skip, Replay,
-- Cleanup), loaded with the package's other .sql files in sql.go, where each
-- is bound to the Go structs of its named arguments (@name) and of its result
-- row (columns by name, hence the aliases). None of them changes a row under
-- a live lease of a relay (a replay only waits for a claim in flight, see
-- OpsReplayFence), and every state change re-checks the row after locking it.

-- name: OpsStatus :one
-- One snapshot of the backlog. The backlog counts visit unpublished rows only
-- (the partial indexes); throughput reads the last 15 minutes of
-- outbox_published_idx. pending includes backing-off events; a replayed
-- event's age counts from the replay request, not from its first commit.
WITH backlog AS (
    SELECT count(*) FILTER (WHERE quarantined_at IS NULL)                          AS pending,
           min(coalesce(replay_requested_at, occurred_at)) FILTER (WHERE quarantined_at IS NULL)
                                                                                   AS oldest_pending,
           count(*) FILTER (WHERE quarantined_at IS NOT NULL)                      AS quarantined,
           count(*) FILTER (WHERE quarantined_at IS NULL
                              AND attempt_count > 0
                              AND available_at > now()
                              AND (claim_until IS NULL OR claim_until < now()))    AS backing_off,
           count(*) FILTER (WHERE replay_requested_at IS NOT NULL)                 AS replaying
    FROM outbox_events
    WHERE published_at IS NULL
      AND skipped_at IS NULL
), recent AS (
    SELECT count(*) FILTER (WHERE published_at > now() - interval '1 minute')  AS last_1m,
           count(*) FILTER (WHERE published_at > now() - interval '5 minutes') AS last_5m,
           count(*)                                                            AS last_15m
    FROM outbox_events
    WHERE published_at > now() - interval '15 minutes'
)
SELECT now()                                                                  AS checked_at,
       backlog.pending,
       coalesce(extract(epoch FROM now() - backlog.oldest_pending), 0)::float8 AS oldest_pending_age_seconds,
       backlog.quarantined,
       backlog.backing_off,
       backlog.replaying,
       (SELECT count(*) FROM outbox_events WHERE skipped_at IS NOT NULL)       AS skipped,
       recent.last_1m                                                          AS published_last_1m,
       recent.last_5m                                                          AS published_last_5m,
       recent.last_15m                                                         AS published_last_15m,
       (SELECT deleted_before FROM outbox_cleanup_horizon)                     AS cleanup_horizon
FROM backlog, recent;

-- name: OpsLeases :many
-- Live leases by owner: how many unpublished events each relay holds and
-- when its first lease ends.
SELECT claimed_by, count(*) AS events, min(claim_until) AS earliest_expiry
FROM outbox_events
WHERE published_at IS NULL
  AND claim_until > now()
GROUP BY claimed_by
ORDER BY claimed_by;

-- name: OpsSinkBreakers :many
-- The relays whose breaker on their sink is open (outbox_sink_breakers,
-- written by the relays), the longest open first; stale when the relay has
-- not probed for ten minutes (ProbeMax is 30 s by default): it stopped
-- with its breaker open, or cannot reach the database.
SELECT owner, opened_at, probed_at, probes, coalesce(last_error, '') AS last_error,
       probed_at < now() - interval '10 minutes' AS stale
FROM outbox_sink_breakers
ORDER BY opened_at, owner;

-- name: OpsList :many
-- At most @max_events events: every event (@filter = 'all'), the
-- unpublished, unquarantined ones (@filter = 'pending'), those of them an
-- unpublished predecessor holds back (@filter = 'held'), the quarantined
-- ones waiting for an operator (@filter = 'quarantined') or the skipped ones
-- (@filter = 'skipped'); of one aggregate when @aggregate_id is not empty
-- (and of type @aggregate_type when that is not empty), of event type
-- @event_type, whose last_error contains @error_contains ignoring case, that
-- occurred before @occurred_before (each: any when ''/NULL). With @after_set,
-- only those after the key (@after_occurred_at, @after_aggregate_type,
-- @after_aggregate_id, @after_sequence) in the list's order: a keyset page.
-- The oldest first, or the newest when @newest_first.
-- db_now is the database's clock, which the event's state is derived at.
-- blocked: an unpublished, unskipped predecessor holds the event back (the
-- lane rule RelayClaim applies, migrations/00006).
SELECT e.event_id, e.aggregate_type, e.aggregate_id, e.aggregate_sequence, e.event_type,
       e.schema_version, e.occurred_at, e.available_at, e.claimed_by, e.claim_until,
       e.published_at, e.attempt_count, e.last_error, e.quarantined_at, e.skipped_at,
       e.skipped_by, e.skip_reason, e.replay_requested_at, now() AS db_now,
       e.published_at IS NULL AND EXISTS (
           SELECT 1 FROM outbox_unpublished_predecessors(e.aggregate_type, e.aggregate_id, e.aggregate_sequence)
       ) AS blocked
FROM outbox_events e
WHERE (@filter = 'all'
       OR (@filter = 'pending' AND e.published_at IS NULL AND e.quarantined_at IS NULL AND e.skipped_at IS NULL)
       OR (@filter = 'held' AND e.published_at IS NULL AND e.quarantined_at IS NULL AND e.skipped_at IS NULL
           AND EXISTS (SELECT 1 FROM outbox_unpublished_predecessors(e.aggregate_type, e.aggregate_id, e.aggregate_sequence)))
       OR (@filter = 'quarantined' AND e.published_at IS NULL AND e.quarantined_at IS NOT NULL AND e.skipped_at IS NULL)
       OR (@filter = 'skipped' AND e.published_at IS NULL AND e.skipped_at IS NOT NULL))
  AND (@aggregate_id = '' OR e.aggregate_id = @aggregate_id)
  AND (@aggregate_type = '' OR e.aggregate_type = @aggregate_type)
  AND (@event_type = '' OR e.event_type = @event_type)
  AND (@error_contains = '' OR strpos(lower(e.last_error), lower(@error_contains)) > 0)
  AND (@occurred_before::timestamptz IS NULL OR e.occurred_at < @occurred_before)
  AND (NOT @after_set::bool
       OR (e.occurred_at, e.aggregate_type, e.aggregate_id, e.aggregate_sequence)
          > (@after_occurred_at::timestamptz, @after_aggregate_type::text, @after_aggregate_id::text, @after_sequence::bigint))
ORDER BY CASE WHEN @newest_first::bool THEN e.occurred_at END DESC,
         e.occurred_at, e.aggregate_type, e.aggregate_id, e.aggregate_sequence
LIMIT @max_events;

-- name: OpsListHeld :many
-- OpsList's held list (@filter = 'held'), as one pass: the unpublished
-- events that hold their aggregate back (unskipped, or skipped with a
-- tombstone not yet handed on: outbox_unpublished_predecessors' rows),
-- each with its aggregate's lowest such sequence (the lane's head, read in
-- one window over the unpublished rows); an unquarantined, unskipped event
-- above its lane's head is held. The per-row EXISTS of OpsList probes the
-- lane index once per unpublished row, about twice as slow on a backlog of
-- 30,000 (BenchmarkConsoleList). The same filters, keyset and order as
-- OpsList's, the oldest first. It takes OpsList's arguments and answers
-- only what OpsList would for @filter = 'held' (never the newest first).
SELECT e.event_id, e.aggregate_type, e.aggregate_id, e.aggregate_sequence, e.event_type,
       e.schema_version, e.occurred_at, e.available_at, e.claimed_by, e.claim_until,
       e.published_at, e.attempt_count, e.last_error, e.quarantined_at, e.skipped_at,
       e.skipped_by, e.skip_reason, e.replay_requested_at, now() AS db_now,
       true AS blocked
FROM (SELECT u.*, min(u.aggregate_sequence) OVER (PARTITION BY u.aggregate_type, u.aggregate_id) AS lane_head
      FROM outbox_events u
      WHERE u.published_at IS NULL
        AND (u.skipped_at IS NULL OR u.skip_published_at IS NULL)
        AND (@aggregate_id = '' OR u.aggregate_id = @aggregate_id)
        AND (@aggregate_type = '' OR u.aggregate_type = @aggregate_type)) e
WHERE @filter = 'held' AND NOT @newest_first::bool
  AND e.aggregate_sequence > e.lane_head
  AND e.quarantined_at IS NULL
  AND e.skipped_at IS NULL
  AND (@event_type = '' OR e.event_type = @event_type)
  AND (@error_contains = '' OR strpos(lower(e.last_error), lower(@error_contains)) > 0)
  AND (@occurred_before::timestamptz IS NULL OR e.occurred_at < @occurred_before)
  AND (NOT @after_set::bool
       OR (e.occurred_at, e.aggregate_type, e.aggregate_id, e.aggregate_sequence)
          > (@after_occurred_at::timestamptz, @after_aggregate_type::text, @after_aggregate_id::text, @after_sequence::bigint))
ORDER BY e.occurred_at, e.aggregate_type, e.aggregate_id, e.aggregate_sequence
LIMIT @max_events;

-- name: OpsLockEvent :one
-- One event, row-locked until the operator's transaction ends, with the
-- columns its state is derived from (see EventInfo): the columns of OpsList.
SELECT e.event_id, e.aggregate_type, e.aggregate_id, e.aggregate_sequence, e.event_type,
       e.schema_version, e.occurred_at, e.available_at, e.claimed_by, e.claim_until,
       e.published_at, e.attempt_count, e.last_error, e.quarantined_at, e.skipped_at,
       e.skipped_by, e.skip_reason, e.replay_requested_at, now() AS db_now,
       e.published_at IS NULL AND EXISTS (
           SELECT 1 FROM outbox_unpublished_predecessors(e.aggregate_type, e.aggregate_id, e.aggregate_sequence)
       ) AS blocked
FROM outbox_events e
WHERE e.event_id = @event_id
FOR UPDATE OF e;

-- name: OpsRetry :exec
-- The event becomes available now with a fresh attempt budget and out of
-- quarantine. last_error is kept as the record of what went wrong.
-- The old owner is cleared too: a relay whose lease expired may still record
-- a late failure fenced by claimed_by, which would undo this retry.
UPDATE outbox_events
SET available_at   = now(),
    attempt_count  = 0,
    quarantined_at = NULL,
    claimed_by     = NULL,
    claim_until    = NULL
WHERE event_id = @event_id
  AND published_at IS NULL
  AND skipped_at IS NULL
  AND (claim_until IS NULL OR claim_until < now());

-- name: OpsRetryQuarantinedPlan :many
-- What OpsRetryQuarantinedBatch would retry now: the quarantined,
-- unpublished, unskipped events not under a live lease, quarantined at or
-- after @quarantined_since (any time when NULL), whose last_error contains
-- @error_contains ignoring case (any when ''), of aggregate type
-- @aggregate_type (any when ''). The first @sample_size of them, oldest
-- quarantine first, with the columns of OpsList; matching, and the first and
-- last quarantined_at, are over every match (the window runs before the
-- LIMIT). No row at all when nothing matches. blocked is not computed: a
-- quarantined event's state is quarantined whatever its predecessors. The
-- same filter as OpsRetryQuarantinedBatch, without its upper bound.
SELECT e.event_id, e.aggregate_type, e.aggregate_id, e.aggregate_sequence, e.event_type,
       e.schema_version, e.occurred_at, e.available_at, e.claimed_by, e.claim_until,
       e.published_at, e.attempt_count, e.last_error, e.quarantined_at, e.skipped_at,
       e.skipped_by, e.skip_reason, e.replay_requested_at, now() AS db_now,
       false                          AS blocked,
       count(*) OVER ()               AS matching,
       min(e.quarantined_at) OVER ()  AS first_quarantined_at,
       max(e.quarantined_at) OVER ()  AS last_quarantined_at
FROM outbox_events e
WHERE e.quarantined_at IS NOT NULL
  AND e.published_at IS NULL
  AND e.skipped_at IS NULL
  AND (e.claim_until IS NULL OR e.claim_until < now())
  AND (@quarantined_since::timestamptz IS NULL OR e.quarantined_at >= @quarantined_since)
  AND (@error_contains = '' OR strpos(lower(e.last_error), lower(@error_contains)) > 0)
  AND (@aggregate_type = '' OR e.aggregate_type = @aggregate_type)
ORDER BY e.quarantined_at, e.event_id
LIMIT @sample_size;

-- name: OpsRetryQuarantinedBegin :one
-- The audit row of a bulk retry, written before its first batch; started_at
-- is the upper bound of the quarantines it retries.
INSERT INTO outbox_bulk_retries (retried_by, reason, quarantined_since, error_contains, aggregate_type)
VALUES (@retried_by, nullif(@reason, ''), @quarantined_since, @error_contains, @aggregate_type)
RETURNING id, started_at;

-- name: OpsRetryQuarantinedBatch :one
-- One bounded batch of a bulk retry: at most @batch_size events of the
-- filter of OpsRetryQuarantinedPlan, quarantined no later than @until (the
-- audit row's started_at, so an event quarantined again while the retry runs
-- is not retried again, and the walk ends), get what OpsRetry gives one
-- event: available now, a fresh attempt budget, out of quarantine, no old
-- owner whose late failure could undo it; last_error is kept. SKIP LOCKED
-- leaves a row an operator's command or another bulk retry holds, and a row
-- changed concurrently (skipped, published) is re-checked after its lock.
-- The audit row @retry_id counts the batch in the same statement, so it
-- commits with it. Returns the number of events retried.
WITH batch AS (
    SELECT e.event_id
    FROM outbox_events e
    WHERE e.quarantined_at IS NOT NULL
      AND e.published_at IS NULL
      AND e.skipped_at IS NULL
      AND (e.claim_until IS NULL OR e.claim_until < now())
      AND (@quarantined_since::timestamptz IS NULL OR e.quarantined_at >= @quarantined_since)
      AND (@error_contains = '' OR strpos(lower(e.last_error), lower(@error_contains)) > 0)
      AND (@aggregate_type = '' OR e.aggregate_type = @aggregate_type)
      AND e.quarantined_at <= @until
    ORDER BY e.quarantined_at, e.event_id
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED
), retried AS (
    UPDATE outbox_events e
    SET available_at   = now(),
        attempt_count  = 0,
        quarantined_at = NULL,
        claimed_by     = NULL,
        claim_until    = NULL
    FROM batch
    WHERE e.event_id = batch.event_id
    RETURNING e.event_id
), counted AS (
    UPDATE outbox_bulk_retries
    SET events = events + (SELECT count(*) FROM retried)
    WHERE id = @retry_id
)
SELECT count(*) AS retried FROM retried;

-- name: OpsRetryQuarantinedLogHolds :exec
-- The bulk retry @retry_id retried @log_holds quarantined holds of the log
-- source (outbox.RetryQuarantinedLogHolds), after its events.
UPDATE outbox_bulk_retries SET log_holds = log_holds + @log_holds WHERE id = @retry_id;

-- name: OpsRetryQuarantinedFinish :exec
-- The bulk retry @retry_id has run its last batch.
UPDATE outbox_bulk_retries SET finished_at = now() WHERE id = @retry_id;

-- name: OpsSkip :exec
-- An operator gives up on a quarantined event: it is never published; the
-- relay claims it once more, to hand its tombstone to the sinks that take
-- one (RelayClaim), and then it no longer holds back its aggregate's later
-- events (outbox_unpublished_predecessors).
UPDATE outbox_events
SET skipped_at  = now(),
    skipped_by  = @skipped_by,
    skip_reason = @skip_reason
WHERE event_id = @event_id
  AND published_at IS NULL
  AND quarantined_at IS NOT NULL
  AND skipped_at IS NULL;

-- name: OpsNotify :exec
-- Wakes the relays when the transaction commits (see NotifyChannel).
SELECT pg_notify('outbox_events', '');

-- name: OpsCleanupHorizon :one
-- The newest cutoff retention cleanup has used, or NULL if it never ran.
SELECT max(deleted_before) AS deleted_before FROM outbox_cleanup_horizon;

-- name: OpsReplayCount :one
-- The published events whose occurred_at is in [@from, @to), of aggregate
-- type @aggregate_type and aggregate @aggregate_id when those are not empty:
-- what OpsReplay would replay.
SELECT count(*) AS events, min(occurred_at) AS first_occurred_at, max(occurred_at) AS last_occurred_at
FROM outbox_events
WHERE published_at IS NOT NULL
  AND occurred_at >= @from
  AND occurred_at < @to
  AND (@aggregate_type = '' OR aggregate_type = @aggregate_type)
  AND (@aggregate_id = '' OR aggregate_id = @aggregate_id);

-- name: OpsReplayLogOrders :many
-- The orders of the log source (outbox_log) with an event whose occurred_at
-- is in [@from, @to), of aggregate type @aggregate_type and aggregate
-- @aggregate_id when those are not empty: the orders a replay of the window
-- replays the log's tail of (each one's events are then read, and their
-- states decided, by outbox.LogEvents). No index serves occurred_at on the
-- log (its writes stay as cheap as they are): an operator's replay scans
-- the log's ranges once.
SELECT aggregate_type, aggregate_id
FROM outbox_log
WHERE occurred_at >= @from
  AND occurred_at < @to
  AND (@aggregate_type = '' OR aggregate_type = @aggregate_type)
  AND (@aggregate_id = '' OR aggregate_id = @aggregate_id)
GROUP BY aggregate_type, aggregate_id
ORDER BY aggregate_type, aggregate_id;

-- name: OpsReplay :many
-- Published events whose occurred_at is in [@from, @to) (of aggregate type
-- @aggregate_type and aggregate @aggregate_id when those are not empty)
-- become unpublished, available now, with a fresh attempt budget, and flagged
-- as replays. claimed_by is cleared so the next claim is not counted as an
-- expired lease. Returns one row per aggregate replayed, with its lowest
-- replayed sequence and the number of its events replayed: the lanes
-- OpsReplayLockLanes and OpsReplayFence then take, in this transaction,
-- before it commits. The UPDATE comes first so that the lanes fenced are
-- exactly the lanes it changed, including an event a relay marked published a
-- moment before.
WITH replayed AS (
    UPDATE outbox_events
    SET published_at        = NULL,
        available_at        = now(),
        attempt_count       = 0,
        claimed_by          = NULL,
        claim_until         = NULL,
        replay_requested_at = now()
    WHERE published_at IS NOT NULL
      AND occurred_at >= @from
      AND occurred_at < @to
      AND (@aggregate_type = '' OR aggregate_type = @aggregate_type)
      AND (@aggregate_id = '' OR aggregate_id = @aggregate_id)
    RETURNING aggregate_type, aggregate_id, aggregate_sequence
)
SELECT aggregate_type, aggregate_id, min(aggregate_sequence) AS first_sequence, count(*) AS events
FROM replayed
GROUP BY aggregate_type, aggregate_id
ORDER BY aggregate_type, aggregate_id;

-- name: OpsReplayLockLanes :exec
-- Row-locks the sequence rows of the replayed aggregates (@aggregate_types
-- and @aggregate_ids, parallel; every aggregate Enqueue wrote has one) until
-- the replay commits. Enqueue's upsert locks the same row, so an event of
-- these aggregates either committed before this lock was granted, and
-- OpsReplayFence (a later statement) sees it, or commits after the replay: a
-- claim that sees it then also sees its replayed predecessor unpublished. Two
-- replays of one aggregate take turns here as well, so the later one's fence
-- sees the events the earlier one made unpublished. In key order, the order
-- in which Enqueue locks several aggregates, so that replays and enqueues do
-- not deadlock on these rows.
SELECT 1
FROM outbox_sequences s
JOIN unnest(@aggregate_types::text[], @aggregate_ids::text[]) AS r(aggregate_type, aggregate_id)
  ON s.aggregate_type = r.aggregate_type
 AND s.aggregate_id = r.aggregate_id
ORDER BY s.aggregate_type, s.aggregate_id
FOR UPDATE OF s;

-- name: OpsReplayFence :exec
-- Fences the claims in flight. Under READ COMMITTED, a relay's claim
-- (RelayClaim) may have judged a replayed event's successor claimable
-- because, in its statement's snapshot, the replayed event was still
-- published; if this replay committed while that claim was uncommitted,
-- another relay would see the replayed event unpublished and no lease on the
-- successor, and take it: two events of one aggregate in flight. So this
-- statement locks every unpublished successor of each replayed aggregate's
-- first replayed sequence (@aggregate_types, @aggregate_ids and
-- @first_sequences, parallel) and waits (no SKIP LOCKED) for any claim that
-- holds one. That claim commits its lease before this replay can commit, so
-- every claim that starts after the replay sees the lease, and RelayClaim's
-- successor-lease probe holds the replayed event back until the successor is
-- done. A claim that reaches a successor while the lock is held skips it
-- (SKIP LOCKED); one that locks it only after the replay committed sees the
-- replay in RelayClaimVerify and gives the successor back. The snapshot is
-- taken after OpsReplayLockLanes, so no successor appears after it. FOR KEY
-- SHARE conflicts with the claim's FOR UPDATE (and OpsLockEvent's), not with
-- the plain UPDATEs of RelayMark, RelayFail and RelayRelease, which lock
-- their rows in no particular order: the replay never waits for those, so it
-- cannot deadlock with them.
SELECT 1
FROM unnest(@aggregate_types::text[], @aggregate_ids::text[], @first_sequences::bigint[])
         AS r(aggregate_type, aggregate_id, first_sequence)
JOIN outbox_events e
  ON e.aggregate_type = r.aggregate_type
 AND e.aggregate_id = r.aggregate_id
 AND e.aggregate_sequence > r.first_sequence
WHERE e.published_at IS NULL
FOR KEY SHARE OF e;

-- name: OpsReplayHorizon :one
-- The replay horizon the starter recorded, if any (outbox_replay_horizon),
-- with the earliest occurred_at a replay may still reach now.
SELECT horizon_ms, reason, recorded_at,
       now() - horizon_ms * interval '1 millisecond' AS earliest_occurred_at
FROM outbox_replay_horizon;

-- name: OpsRecordReplayHorizon :exec
-- The latest recording wins: it reflects the namespace's retention as read
-- by the most recent starter, which is what Temporal applies now.
INSERT INTO outbox_replay_horizon (singleton, horizon_ms, reason, recorded_at)
VALUES (true, @horizon_ms, @reason, now())
ON CONFLICT (singleton) DO UPDATE
SET horizon_ms  = EXCLUDED.horizon_ms,
    reason      = EXCLUDED.reason,
    recorded_at = EXCLUDED.recorded_at;

-- name: OpsCleanupCutoffs :one
-- The cutoffs of one cleanup pass, from the database's clock: events
-- published before the first (never a skipped one), inbox rows processed
-- before the second are deleted. @events_retention_ms and
-- @inbox_retention_ms are retentions in milliseconds.
SELECT now() - @events_retention_ms::bigint * interval '1 millisecond' AS events_cutoff,
       now() - @inbox_retention_ms::bigint * interval '1 millisecond'  AS inbox_cutoff;

-- name: OpsRecordCleanupHorizon :exec
-- Recorded before the first delete commits, so even a cleanup that crashes
-- mid-way leaves the horizon that Replay checks.
INSERT INTO outbox_cleanup_horizon AS h (singleton, deleted_before)
VALUES (true, @deleted_before)
ON CONFLICT (singleton) DO UPDATE
SET deleted_before = greatest(h.deleted_before, EXCLUDED.deleted_before),
    updated_at     = now();

-- name: OpsCleanupEvents :execrows
-- One bounded batch: at most @batch_size events published before @cutoff.
-- Never an unpublished one: pending, backing off, quarantined, being replayed
-- (a replay unpublishes the event), or skipped — a skipped event is
-- quarantined and unpublished, and its row is the record of the operator's
-- decision (who, when, why). SKIP LOCKED leaves rows a relay or another
-- cleanup holds for a later pass; a row changed concurrently is re-checked
-- after its lock.
DELETE FROM outbox_events
WHERE event_id IN (
    SELECT event_id
    FROM outbox_events
    WHERE published_at < @cutoff
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED
);

-- name: OpsCleanupInbox :execrows
-- One bounded batch of at most @batch_size inbox rows processed before
-- @cutoff whose event is no longer retained: an event that can still be
-- replayed keeps its inbox rows, so its local effects are not applied twice.
DELETE FROM processed_events
WHERE (consumer_name, event_id) IN (
    SELECT p.consumer_name, p.event_id
    FROM processed_events p
    WHERE p.processed_at < @cutoff
      AND NOT EXISTS (SELECT 1 FROM outbox_events e WHERE e.event_id = p.event_id)
    LIMIT @batch_size
    FOR UPDATE OF p SKIP LOCKED
);

-- name: OpsCleanupTryLock :one
-- Session-level: one cleanup pass at a time across every starter.
SELECT pg_try_advisory_lock(@lock_key) AS locked;

-- name: OpsCleanupUnlock :one
SELECT pg_advisory_unlock(@lock_key) AS unlocked;

-- name: OpsEventRow :one
-- Every column of one event, in the table's column order (row_to_json keeps
-- it; jsonb would not), so a column added later shows up unasked: what
-- `outboxctl show` prints.
SELECT row_to_json(e)::text
FROM outbox_events e
WHERE e.event_id = @event_id;

-- name: OpsSource :one
-- The database's relay source (outbox_source, one row) and what each
-- table still holds, for `outboxctl source` and its plan: events_pending,
-- the events of outbox_events neither published, skipped nor quarantined
-- (and skipped ones whose tombstone is not out); events_quarantined, those
-- waiting for an operator; log_pending, the log's committed events after
-- their partition's cursor; log_holds, its orders under a hold (a failed
-- event in backoff, a replay, a quarantined one); log_quarantined, the
-- quarantined holds. Only unpublished rows of outbox_events are visited.
SELECT s.source, s.changed_at, s.changed_by, s.reason,
       (SELECT count(*) FROM outbox_events
        WHERE published_at IS NULL AND (skipped_at IS NULL OR skip_published_at IS NULL)
          AND (quarantined_at IS NULL OR skipped_at IS NOT NULL))                      AS events_pending,
       (SELECT count(*) FROM outbox_events
        WHERE published_at IS NULL AND skipped_at IS NULL AND quarantined_at IS NOT NULL) AS events_quarantined,
       (SELECT count(*)
        FROM outbox_log_cursors c
        JOIN outbox_log l ON l.partition = c.partition AND (l.gate, l.pos) > (c.gate, c.pos)) AS log_pending,
       (SELECT count(*) FROM outbox_log_holds)                                           AS log_holds,
       (SELECT count(*) FROM outbox_log_holds WHERE quarantined_at IS NOT NULL)          AS log_quarantined
FROM outbox_source s;

-- name: OpsSetSource :one
-- Records @source as the database's relay source, by @changed_by for
-- @reason, and returns the source it replaced. The row lock makes two
-- operators' changes take turns. A change to the log first makes the log's
-- ranges ahead of its sequence (outbox_log_extend, as the retention pass
-- does), so the producers' first enqueue there has a partition.
WITH old AS (
    SELECT source FROM outbox_source FOR UPDATE
), ranges AS (
    SELECT CASE WHEN @source::text = 'log' THEN outbox_log_extend(2) ELSE 0 END AS made
), upd AS (
    UPDATE outbox_source
    SET source = @source, changed_at = now(), changed_by = @changed_by, reason = @reason
    FROM ranges
    WHERE ranges.made >= 0
    RETURNING outbox_source.changed_at
)
SELECT old.source AS previous, upd.changed_at
FROM old, upd;
