-- Statements of the relay, bound in outbox/sql.go to the Go struct of
-- their named arguments (@name) and of their result row (columns by name);
-- outbox/outboxtest/outboxbench binds RelayClaim and RelayMark for the
-- benchmarks. Every write after the claim is fenced by claimed_by = @owner (the
-- relay's owner), so a relay whose lease was taken over changes nothing of
-- the new owner's.

-- name: RelayClaim :many
-- Claims at most @batch_size events for @owner with a lease of @lease_ms
-- milliseconds, in one statement, the first of the claim's short
-- transaction. A candidate is unpublished, not quarantined or skipped,
-- available, not under a live lease, and the lowest unpublished sequence of
-- its aggregate: an event never overtakes an unfinished predecessor (a
-- quarantined predecessor holds its aggregate back; an operator-skipped one
-- only until its tombstone is out; see outbox_unpublished_predecessors in
-- migrations/00006 and 00016), in outbox_events or in the log
-- (outbox_unpublished_log_predecessors, migrations/00017). So a batch holds
-- at most one event per aggregate, and across relays an aggregate has one
-- lane. An event an operator skipped whose tombstone is not out yet
-- (skip_published_at) is a candidate too, quarantined as it is: the relay
-- hands it to the sinks that take tombstones (skipped), in its lane's
-- place; its lease is never taken as abandoned (it is retried, never
-- quarantined: see RelayFail). SKIP LOCKED lets concurrent relays claim disjoint
-- batches without waiting on each other. attempt_count is counted here, at
-- claim, so an event that crashes its relay still uses up attempts: a
-- candidate whose lease expired with @max_attempts (OUTFLOW_MAX_ATTEMPTS)
-- attempts used is quarantined instead of claimed again — every relay that
-- took it died or stalled before recording an outcome, and only RelayFail
-- would otherwise ever quarantine it.
-- took_over reports a lease that had expired; replay reports an event an
-- operator replayed (replay_requested_at, see operations.sql).
-- RelayClaimVerify follows in the same transaction and gives back what this
-- statement's snapshot could not see to be blocked. The row lock must stay
-- FOR UPDATE: an operator's replay waits for a claim in flight through FOR
-- KEY SHARE (OpsReplayFence), which FOR NO KEY UPDATE would not conflict
-- with.
WITH candidates AS (
    SELECT e.event_id, (e.claimed_by IS NOT NULL) AS took_over,
           (e.claimed_by IS NOT NULL AND e.attempt_count >= @max_attempts AND e.skipped_at IS NULL) AS exhausted
    FROM outbox_events e
    WHERE e.published_at IS NULL
      AND ((e.quarantined_at IS NULL AND e.skipped_at IS NULL)
           OR (e.skipped_at IS NOT NULL AND e.skip_published_at IS NULL))
      AND e.available_at <= now()
      AND (e.claim_until IS NULL OR e.claim_until < now())
      AND NOT EXISTS (
          SELECT 1 FROM outbox_unpublished_predecessors(e.aggregate_type, e.aggregate_id, e.aggregate_sequence)
      )
      -- The lane goes on in the log (migrations/00017): while a database
      -- switches between the poll or cdc source and the log, an earlier
      -- event of the order may be unpublished there. Every log row takes
      -- outbox_log_pos's next value before it is written, so while the
      -- sequence was never used (a database that never used the log) the
      -- log holds no row, committed or not: the first test is one look per
      -- statement (an InitPlan, read after this statement's snapshot was
      -- taken), which spares each candidate the probe of every partition.
      AND ((SELECT pg_sequence_last_value('outbox_log_pos') IS NULL)
           OR NOT EXISTS (
               SELECT 1 FROM outbox_unpublished_log_predecessors(e.aggregate_type, e.aggregate_id, e.aggregate_sequence)
           ))
      -- An operator's replay makes an earlier event unpublished again, maybe
      -- while a later one of its aggregate is being published: a replayed
      -- event also waits for its successors' live leases, so the lane still
      -- carries one event at a time. Only replays need the probe: otherwise
      -- a successor cannot be claimed while its predecessor is unpublished.
      AND (e.replay_requested_at IS NULL OR NOT EXISTS (
          SELECT 1
          FROM outbox_events q
          WHERE q.aggregate_type = e.aggregate_type
            AND q.aggregate_id = e.aggregate_id
            AND q.aggregate_sequence > e.aggregate_sequence
            AND q.published_at IS NULL
            AND q.claim_until >= now()
      ))
      -- A CDC relay's sweeper (@min_age_ms > 0; a polling relay passes 0)
      -- leaves young events to the stream: it takes events older than
      -- @min_age_ms, retries (attempt_count > 0), replays, tombstones and the
      -- events the stream handed it (@handed_off). See cdc.go.
      AND (@min_age_ms::bigint = 0
           OR e.occurred_at < now() - @min_age_ms::bigint * interval '1 millisecond'
           OR e.attempt_count > 0
           OR e.replay_requested_at IS NOT NULL
           OR e.skipped_at IS NOT NULL
           OR e.event_id = ANY(@handed_off::uuid[]))
      -- Never an event this relay still holds (@held: claimed by an earlier
      -- claim whose outcome is not written yet, see pipeline.go): its lease
      -- may have expired while the outcome waited, and that outcome, fenced
      -- by the same owner, could not tell the old claim from a new one.
      AND NOT (e.event_id = ANY(coalesce(@held::uuid[], '{}')))
    ORDER BY e.available_at, e.occurred_at
    LIMIT @batch_size
    FOR UPDATE OF e SKIP LOCKED
), abandoned AS (
    UPDATE outbox_events o
    SET quarantined_at = now(),
        claimed_by     = NULL,
        claim_until    = NULL,
        last_error     = 'quarantined after ' || o.attempt_count || ' attempts: each relay that claimed it lost its lease '
                         || 'before recording an outcome (it crashed or stalled while publishing this event)'
    FROM candidates c
    WHERE o.event_id = c.event_id AND c.exhausted
)
UPDATE outbox_events o
SET claimed_by    = @owner,
    claim_until   = now() + @lease_ms::bigint * interval '1 millisecond',
    attempt_count = o.attempt_count + 1
FROM candidates c
WHERE o.event_id = c.event_id AND NOT c.exhausted
RETURNING o.event_id, o.aggregate_type, o.aggregate_id, o.aggregate_sequence,
          o.event_type, o.schema_version, o.payload, o.occurred_at, o.trace_context,
          o.attempt_count, c.took_over, o.replay_requested_at IS NOT NULL AS replay,
          o.skipped_at IS NOT NULL AS skipped;

-- name: RelayClaimVerify :many
-- The second statement of the claim's transaction: gives back (like
-- RelayRelease: lease cleared, attempt returned) those of the events
-- @event_ids that @owner has just claimed that turn out to be blocked, and
-- returns their IDs; the relay drops them from its batch before publishing
-- anything.
-- RelayClaim decides from its statement's snapshot but row-locks each
-- candidate later, as it reaches it, so under READ COMMITTED an operator's
-- replay of a predecessor may commit in between. The replay waits for a
-- claim that locked a successor before the replay's fence did
-- (OpsReplayFence), but a claim that locks it only after the replay
-- committed still believes the predecessor published. This statement's
-- snapshot is taken after those row locks are held, so it sees any such
-- replay: a just-claimed event with an unpublished, unskipped predecessor
-- goes back, and so does a just-claimed replayed event whose successor is
-- now under a live lease. now() is the transaction's start, as in
-- RelayClaim.
UPDATE outbox_events o
SET claimed_by    = NULL,
    claim_until   = NULL,
    attempt_count = greatest(o.attempt_count - 1, 0)
WHERE o.event_id = ANY(@event_ids::uuid[])
  AND o.claimed_by = @owner
  AND o.published_at IS NULL
  AND (EXISTS (
           SELECT 1 FROM outbox_unpublished_predecessors(o.aggregate_type, o.aggregate_id, o.aggregate_sequence)
       )
       OR ((SELECT pg_sequence_last_value('outbox_log_pos') IS NOT NULL) AND EXISTS ( -- as RelayClaim's
           SELECT 1 FROM outbox_unpublished_log_predecessors(o.aggregate_type, o.aggregate_id, o.aggregate_sequence)
       ))
       -- RelayClaim's successor-lease probe, in this fresher snapshot.
       OR (o.replay_requested_at IS NOT NULL AND EXISTS (
           SELECT 1
           FROM outbox_events q
           WHERE q.aggregate_type = o.aggregate_type
             AND q.aggregate_id = o.aggregate_id
             AND q.aggregate_sequence > o.aggregate_sequence
             AND q.published_at IS NULL
             AND q.claim_until >= now()
       )))
RETURNING o.event_id;

-- name: RelayMarkAsync :exec
-- Lets the mark's transaction commit without waiting for its WAL to reach
-- the disk: a relay marks about once per acknowledgement batch, and on a
-- machine where Temporal's own store shares the disk each of those flushes
-- slowed Temporal's starts down. A mark lost to a crash of PostgreSQL is the
-- ACK gap: once the claim's lease ends the event is published again and
-- Temporal absorbs the start (workflow ID = event ID). Nothing that depends
-- on the mark outlives it: a later commit that waits for the disk (the claim
-- of the aggregate's next event, which needs this mark) flushes the WAL up
-- to itself, the mark included. TestMarkLostToAPostgresCrash shows both.
SET LOCAL synchronous_commit TO off;

-- name: RelayMark :many
-- Marks the acknowledged events @event_ids published, only where @owner
-- still holds the claim. claimed_by is kept as the record of who published
-- the event. A replay request is fulfilled by the publish, so its flag is
-- cleared. A skipped event's tombstone is out: skip_published_at, and the
-- event stays unpublished (it never was).
UPDATE outbox_events
SET published_at        = CASE WHEN skipped_at IS NULL THEN now() END,
    skip_published_at   = CASE WHEN skipped_at IS NOT NULL THEN now() END,
    claim_until         = NULL,
    replay_requested_at = NULL
WHERE event_id = ANY(@event_ids::uuid[])
  AND claimed_by = @owner
  AND published_at IS NULL
RETURNING event_id;

-- name: RelayFail :many
-- Records failed publishes of @owner and releases their leases: per event
-- (the arrays are parallel, one element per event) the error (bounded to
-- 1000 characters) and a backoff delay in milliseconds. An event is
-- quarantined instead when its error is permanent or it has used up
-- @max_attempts attempts. Returns the events it changed and whether each was
-- quarantined. A skipped event's tombstone is never quarantined (the event
-- is already given up, and nothing is left for an operator to decide): it
-- is retried after its delay, however it failed.
UPDATE outbox_events o
SET last_error     = left(f.err, 1000),
    available_at   = CASE WHEN (f.permanent OR o.attempt_count >= @max_attempts) AND o.skipped_at IS NULL
                          THEN o.available_at
                          ELSE now() + f.delay_ms * interval '1 millisecond' END,
    quarantined_at = CASE WHEN (f.permanent OR o.attempt_count >= @max_attempts) AND o.skipped_at IS NULL
                          THEN now()
                          ELSE o.quarantined_at END,
    claimed_by     = NULL,
    claim_until    = NULL
FROM unnest(@event_ids::uuid[], @errors::text[], @delays_ms::bigint[], @permanent::bool[])
         AS f(event_id, err, delay_ms, permanent)
WHERE o.event_id = f.event_id
  AND o.claimed_by = @owner
  AND o.published_at IS NULL
RETURNING o.event_id, o.quarantined_at IS NOT NULL AND o.skipped_at IS NULL AS quarantined;

-- name: RelaySinkRelease :many
-- Gives back claims of @owner whose publish failed for the sink's fault
-- (unreachable, throttled, cut by the relay's deadline or shutdown; see
-- fault.go), per event (parallel arrays) with its error and a delay in
-- milliseconds: the attempt counted at claim is returned, so an outage never
-- uses up an event's OUTFLOW_MAX_ATTEMPTS, and the error is kept in
-- last_error for the operator. Returns the events it changed.
UPDATE outbox_events o
SET last_error    = left(f.err, 1000),
    available_at  = now() + f.delay_ms * interval '1 millisecond',
    attempt_count = greatest(o.attempt_count - 1, 0),
    claimed_by    = NULL,
    claim_until   = NULL
FROM unnest(@event_ids::uuid[], @errors::text[], @delays_ms::bigint[]) AS f(event_id, err, delay_ms)
WHERE o.event_id = f.event_id
  AND o.claimed_by = @owner
  AND o.published_at IS NULL
RETURNING o.event_id;

-- name: RelayRelease :execrows
-- Gives back claims of @owner that were never attempted (the relay is
-- shutting down, or the lease ran too short to start a publish): the attempt
-- counted at claim is returned and the event is available again at once.
UPDATE outbox_events
SET claimed_by    = NULL,
    claim_until   = NULL,
    attempt_count = greatest(attempt_count - 1, 0)
WHERE event_id = ANY(@event_ids::uuid[])
  AND claimed_by = @owner
  AND published_at IS NULL;

-- name: RelayListen :exec
LISTEN outbox_events;

-- name: RelayGauges :one
-- The backlog gauges, read periodically (never per scrape). Only unpublished
-- rows are visited, through the partial indexes: the cost follows the
-- backlog, not the table's history. A replayed event's age counts from the
-- replay request, so a replay of old events does not look like lag.
SELECT count(*) FILTER (WHERE quarantined_at IS NULL)                                  AS pending,
       coalesce(extract(epoch FROM now() - min(coalesce(replay_requested_at, occurred_at))
                                           FILTER (WHERE quarantined_at IS NULL)), 0)::float8
                                                                                       AS oldest_pending_age_seconds,
       count(*) FILTER (WHERE quarantined_at IS NOT NULL)                              AS quarantined
FROM outbox_events
WHERE published_at IS NULL
  AND skipped_at IS NULL;

-- name: LogGauges :one
-- The log source's gauges, read every GaugeInterval (never per scrape).
-- horizon_age_seconds: how long the oldest transaction on the server that
-- holds an xid (a session's, or a prepared transaction) has been open: the
-- horizon cannot pass it, so every log event committed after it waits.
-- Sessions of other roles show their xid only to a role with
-- pg_read_all_stats (pg_monitor). pending: committed events after the
-- cursors, readable or waiting for the horizon; oldest_pending_age_seconds
-- the age of the oldest of the partitions' next events (each partition's
-- first after its cursor: 16 index probes), which grows when a partition
-- stalls for any reason (no relay owns it, the horizon, a sink outage).
-- holds, quarantined: the orders under a hold, and those waiting for an
-- operator. ranges_ahead: the ranges of outbox_log made wholly beyond
-- outbox_log_pos (RetainLog keeps 2; at 0 the enqueues fail once the
-- current range is full).
SELECT coalesce(extract(epoch FROM now() - least(
           (SELECT min(xact_start) FROM pg_stat_activity WHERE backend_xid IS NOT NULL),
           (SELECT min(prepared) FROM pg_prepared_xacts))), 0)::float8 AS horizon_age_seconds,
       (SELECT count(*)
        FROM outbox_log_cursors c
        JOIN outbox_log l ON l.partition = c.partition AND (l.gate, l.pos) > (c.gate, c.pos)) AS pending,
       coalesce(extract(epoch FROM now() - (
           SELECT min(n.occurred_at)
           FROM outbox_log_cursors c
           CROSS JOIN LATERAL (
               SELECT l.occurred_at
               FROM outbox_log l
               WHERE l.partition = c.partition AND (l.gate, l.pos) > (c.gate, c.pos)
               ORDER BY l.gate, l.pos
               LIMIT 1
           ) n)), 0)::float8 AS oldest_pending_age_seconds,
       (SELECT count(*) FROM outbox_log_holds) AS holds,
       (SELECT count(*) FROM outbox_log_holds WHERE quarantined_at IS NOT NULL) AS quarantined,
       (SELECT count(*) FROM outbox_log_ranges
        WHERE dropped_at IS NULL AND lo > (SELECT last_value FROM outbox_log_pos)) AS ranges_ahead;

-- name: CDCSlot :many
-- The slot @slot_name of this database, if it exists: whether a relay streams
-- it and the pid of the walsender that does (0 when none), how far its
-- confirmed position trails the server's WAL (lag) and how much WAL it
-- holds back from recycling (retained, from its restart_lsn),
-- its wal_status ('lost' once max_slot_wal_keep_size removed WAL it needed)
-- and max_slot_wal_keep_size in bytes (-1: unlimited).
SELECT s.active,
       coalesce(s.active_pid, 0) AS active_pid,
       coalesce(s.confirmed_flush_lsn::text, '0/0') AS confirmed_flush_lsn,
       coalesce((pg_current_wal_lsn() - s.confirmed_flush_lsn)::bigint, 0) AS lag_bytes,
       coalesce((pg_current_wal_lsn() - s.restart_lsn)::bigint, 0) AS retained_bytes,
       coalesce(s.wal_status, '') AS wal_status,
       (SELECT CASE WHEN setting::bigint < 0 THEN -1 ELSE setting::bigint * 1024 * 1024 END
        FROM pg_settings WHERE name = 'max_slot_wal_keep_size') AS max_slot_wal_keep_size_bytes
FROM pg_replication_slots s
WHERE s.slot_name = @slot_name
  AND s.database = current_database();

-- name: CDCWALLevel :one
-- The server's wal_level: the cdc source's stream needs 'logical'.
SELECT current_setting('wal_level') AS wal_level;

-- name: CDCPublicationExists :one
SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = @publication);
