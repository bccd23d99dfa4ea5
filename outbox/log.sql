-- Statements of the log relay source (LogRelay, log_*.go), bound in
-- log_sql.go. The protocol is model/log.pml's (model/README.md, "The log
-- source"): R1 take, R2 read, R4 advance for a partition's reader; H1-H4
-- for its owner's hold worker; O1-O3 for the operator. Every change of a
-- partition's holds locks its cursor row first (the advance by its UPDATE,
-- everything else by LogFence, LogOpLock or LogOpReplayLock) and, but for
-- the advance's own, arms its epoch, so the epoch the reader read before
-- the holds says whether its view of them is still current (LogTry and
-- LogAdvance check it).

-- name: LogTake :many
-- R1: takes for @owner, with a lease of @lease_ms, at most @max_partitions
-- partitions whose lease is not live (never taken, released, expired: its
-- holder died or stalled), none of @running (partitions this relay still
-- has a reader on, whose lease ran out while it worked: that reader stops at
-- its next fenced write, and a second one beside it would share its owner
-- name). tries and epoch are kept: a takeover after a crash at a position
-- counts toward isolating the event there.
UPDATE outbox_log_cursors c
SET owner       = @owner,
    lease_until = now() + @lease_ms::bigint * interval '1 millisecond'
FROM (
    SELECT partition
    FROM outbox_log_cursors
    WHERE (lease_until IS NULL OR lease_until < now())
      AND NOT (partition = ANY(coalesce(@running::int[], '{}')))
    ORDER BY partition
    LIMIT @max_partitions
    FOR UPDATE SKIP LOCKED
) free
WHERE c.partition = free.partition
RETURNING c.partition;

-- name: LogBeat :many
-- The look for free partitions, first: renews @owner's row in
-- outbox_log_relays until @lease_ms from now (when less than half of that
-- is left: an idle relay writes it about twice a lease), deletes the rows
-- of relays past their seen_until (skipping rows another relay is deleting
-- or renewing), and returns the live relays with their MaxPartitions and
-- the partitions each holds under a live lease, in owner order: @owner
-- among them (the statement's snapshot does not see its own upsert), and an
-- owner that holds partitions without a row (a relay from before the
-- registry) with the most partitions it could hold. Each relay's share
-- follows from these rows (log_share.go).
WITH beat AS (
    INSERT INTO outbox_log_relays (owner, max_partitions, seen_until)
    VALUES (@owner, @max_partitions, now() + @lease_ms::bigint * interval '1 millisecond')
    ON CONFLICT (owner) DO UPDATE
    SET max_partitions = excluded.max_partitions, seen_until = excluded.seen_until
    WHERE outbox_log_relays.max_partitions <> excluded.max_partitions
       OR outbox_log_relays.seen_until < now() + @lease_ms::bigint * interval '1 millisecond' / 2
    RETURNING owner
), gone AS (
    DELETE FROM outbox_log_relays
    WHERE owner IN (
        SELECT owner FROM outbox_log_relays
        WHERE seen_until < now() AND owner <> @owner
        FOR UPDATE SKIP LOCKED
    )
    RETURNING owner
), live AS (
    SELECT owner, max_partitions FROM outbox_log_relays WHERE seen_until >= now() AND owner <> @owner
    UNION ALL
    SELECT @owner::text, @max_partitions::int
), held AS (
    SELECT owner, count(*)::int AS held
    FROM outbox_log_cursors
    WHERE owner IS NOT NULL AND lease_until >= now()
    GROUP BY owner
)
SELECT coalesce(l.owner, h.owner) AS owner, coalesce(l.max_partitions, 16) AS max_partitions,
       coalesce(h.held, 0) AS held
FROM live l
FULL JOIN held h ON h.owner = l.owner
ORDER BY 1;

-- name: LogUnregister :exec
-- Deletes @owner's row of outbox_log_relays at a graceful shutdown, after
-- its partitions were given back: the other relays' shares grow at their
-- next look instead of after the lease.
DELETE FROM outbox_log_relays WHERE owner = @owner;

-- name: LogCursor :many
-- R2.1, the read's first statement: @partition's cursor while @owner holds
-- a live lease on it, with the epoch (read before the holds: a change of
-- the holds after it makes LogTry and the advance fail) and tries (batches
-- begun here that never finished); renew says less than @renew_ms of the
-- lease is left. No row: the lease is lost. It writes nothing, so a read
-- that finds no event writes nothing (LogTry renews a lease running short).
SELECT gate, pos, epoch, tries,
       lease_until < now() + @renew_ms::bigint * interval '1 millisecond' AS renew
FROM outbox_log_cursors
WHERE partition = @partition
  AND owner = @owner
  AND lease_until >= now();

-- name: LogHoldsView :many
-- R2.2: the orders of @partition under a hold (the view). The reader skips
-- their events: the hold owns them.
SELECT aggregate_type, aggregate_id
FROM outbox_log_holds
WHERE partition = @partition;

-- name: LogBatch :many
-- R2.3: at most @window events of @partition after the cursor
-- (@gate, @pos), in key order, whose gate is below this statement's
-- snapshot's xmin (the horizon): a transaction still open has an xid at or
-- below the gate it stamps, so every row with a gate below xmin has either
-- committed or never will, and a row committed later gets a key after the
-- cursor (the model's NO EVENT BEHIND THE CURSOR; mutant log_no_horizon).
-- waits: an earlier event of the order is unpublished in outbox_events
-- (a database switching between the poll or cdc source and the log,
-- migrations/00017): the event goes to a hold that waits for it (mutant
-- switch_log_ignores_poll).
SELECT l.pos, l.gate, l.event_id, l.aggregate_type, l.aggregate_id, l.aggregate_sequence,
       l.event_type, l.schema_version, l.payload, l.occurred_at, l.trace_context,
       EXISTS (SELECT 1 FROM outbox_unpublished_predecessors(l.aggregate_type, l.aggregate_id, l.aggregate_sequence)) AS waits
FROM outbox_log l
WHERE partition = @partition
  AND (gate, pos) > (@gate::bigint, @pos::bigint)
  AND gate < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
ORDER BY gate, pos
LIMIT @window;

-- name: LogTry :many
-- R2.1's write, the read's last statement, after the batch: tries + 1 when
-- @begin (the batch is not empty, and tries is below 2: at 2 the read
-- isolates instead; an empty read begins nothing that could die), and the
-- lease renewed for @lease_ms, fenced by @owner, a live lease and the
-- epoch the read saw first. Its row is what makes the read one step of the
-- model: the epoch unchanged since LogCursor means the holds read between
-- are still the partition's (every change of them arms the epoch, and only
-- this reader's own advance moves the cursor). No row: the epoch moved or
-- the lease is lost; the reader reads again.
UPDATE outbox_log_cursors
SET tries       = CASE WHEN @begin::bool THEN least(tries + 1, 2) ELSE tries END,
    lease_until = now() + @lease_ms::bigint * interval '1 millisecond'
WHERE partition = @partition
  AND owner = @owner
  AND lease_until >= now()
  AND epoch = @epoch
RETURNING tries;

-- name: LogAdvance :one
-- R4, one statement and its own transaction, after the batch's publishes
-- (mutant log_advance_before_publish): moves @partition's cursor to
-- (@gate, @pos), the last key of the longest prefix of the batch whose
-- events are all done, and tries back to 0, fenced by @owner and the epoch
-- of the read (mutant log_no_epoch_check), not by the lease: its publishes
-- ended under the lease. Only when the cursor moved are the holds of the
-- prefix's failed orders inserted (parallel arrays, one element per order;
-- from = the failed event's key): a plain INSERT, as the epoch guarantees
-- that no hold appeared since the view. advanced false: the epoch moved
-- (LogRefused follows) or @owner lost the partition.
WITH adv AS (
    UPDATE outbox_log_cursors
    SET gate = @gate, pos = @pos, tries = 0, advanced_at = now()
    WHERE partition = @partition
      AND owner = @owner
      AND epoch = @epoch
    RETURNING partition
), held AS (
    INSERT INTO outbox_log_holds (aggregate_type, aggregate_id, partition, from_gate, from_pos,
                                  attempts, available_at, quarantined_at, last_error)
    SELECT h.aggregate_type, h.aggregate_id, adv.partition, h.from_gate, h.from_pos, h.attempts,
           now() + h.delay_ms * interval '1 millisecond',
           CASE WHEN h.quarantined THEN now() END,
           left(h.err, 1000)
    FROM adv,
         unnest(@aggregate_types::text[], @aggregate_ids::text[], @from_gates::bigint[], @from_pos::bigint[],
                @attempts::int[], @delays_ms::bigint[], @quarantined::bool[], @errors::text[])
             AS h(aggregate_type, aggregate_id, from_gate, from_pos, attempts, delay_ms, quarantined, err)
    RETURNING 1
)
SELECT (SELECT count(*) FROM adv) > 0 AS advanced, (SELECT count(*) FROM held) AS holds;

-- name: LogRefused :many
-- After an advance that changed nothing: while @owner still owns
-- @partition the epoch moved (a hold changed since the view), so tries goes
-- back to 0 (nobody died) and the batch is read again; no row: the
-- partition is someone else's.
UPDATE outbox_log_cursors
SET tries = 0
WHERE partition = @partition
  AND owner = @owner
RETURNING epoch;

-- name: LogRelease :exec
-- Gives @owner's lease on @partition back at a graceful shutdown, or when
-- the relay holds more than its share (log_share.go), after the reader's
-- last batch advanced: another relay takes it at once instead of after the
-- lease.
UPDATE outbox_log_cursors
SET owner = NULL, lease_until = NULL
WHERE partition = @partition
  AND owner = @owner;

-- name: LogFence :many
-- The first statement of each of the hold worker's transactions: locks
-- @partition's cursor row while @owner owns it (and, when @live, under a
-- live lease: an attempt or a release; an outcome is recorded by the owner
-- whose publish ended under the lease), which fences a stale owner's worker
-- and serialises the worker with the advance. No row: stop.
SELECT gate, pos
FROM outbox_log_cursors
WHERE partition = @partition
  AND owner = @owner
  AND (NOT @live::bool OR lease_until >= now())
FOR UPDATE;

-- name: LogHoldsDue :many
-- When @partition's next unquarantined hold is due, in seconds from now (0
-- or less: due now; no row: none): the hold worker's look before its
-- fenced transaction, which locks the cursor row (a write), so that a
-- partition without holds costs its worker no write, and a hold in backoff
-- is worked when its backoff ends rather than at the safety poll.
SELECT extract(epoch FROM min(available_at) - now())::float8 AS due_in_seconds
FROM outbox_log_holds
WHERE partition = @partition AND quarantined_at IS NULL
HAVING count(*) > 0;

-- name: LogHoldNext :many
-- H1: the next unquarantined hold of @partition due now, oldest due first,
-- with its head: the first event of its order with from <= key <= the
-- cursor (@gate, @pos). No head: the hold caught up with the cursor and is
-- released (LogHoldRelease). skipped: an operator skipped the head
-- (outbox_log_skips), whose tombstone is published in its place, never its
-- payload (mutant log_head_of_skipped); a replay's hold hands it again as
-- a tombstone, which its consumers passed before. waits: an earlier event
-- of the order is unpublished in outbox_events (LogBatch's waits): the
-- head is not published, the hold waits (LogHoldWait). Runs after
-- LogFence, whose lock keeps the cursor and the holds still.
SELECT h.aggregate_type, h.aggregate_id, h.from_gate, h.from_pos, h.attempts,
       coalesce((head.gate, head.pos) <= (h.replay_gate, h.replay_pos), false) AS replay,
       EXISTS (SELECT 1 FROM outbox_log_skips s WHERE s.pos = head.pos) AS skipped,
       head.pos AS head_pos, head.gate AS head_gate, head.event_id, head.aggregate_sequence,
       head.event_type, head.schema_version, head.payload, head.occurred_at, head.trace_context,
       coalesce(EXISTS (SELECT 1 FROM outbox_unpublished_predecessors(h.aggregate_type, h.aggregate_id, head.aggregate_sequence)), false) AS waits
FROM outbox_log_holds h
LEFT JOIN LATERAL (
    SELECT l.pos, l.gate, l.event_id, l.aggregate_sequence, l.event_type, l.schema_version, l.payload, l.occurred_at,
           l.trace_context
    FROM outbox_log l
    WHERE l.aggregate_type = h.aggregate_type
      AND l.aggregate_id = h.aggregate_id
      AND (l.gate, l.pos) >= (h.from_gate, h.from_pos)
      AND (l.gate, l.pos) <= (@gate::bigint, @pos::bigint)
    ORDER BY l.gate, l.pos
    LIMIT 1
) head ON true
WHERE h.partition = @partition
  AND h.quarantined_at IS NULL
  AND h.available_at <= now()
ORDER BY h.available_at
LIMIT 1;

-- name: LogHoldAttempt :exec
-- H1: the head's attempt, counted before its publish (a publish that kills
-- the process still uses one up), or the hold quarantined when @quarantine
-- (its attempts are used up: every publish of its head died or failed).
UPDATE outbox_log_holds
SET attempts       = CASE WHEN @quarantine::bool THEN attempts ELSE attempts + 1 END,
    quarantined_at = CASE WHEN @quarantine::bool THEN now() END,
    last_error     = CASE WHEN @quarantine::bool THEN left(@error::text, 1000) ELSE last_error END
WHERE aggregate_type = @aggregate_type
  AND aggregate_id = @aggregate_id
  AND from_gate = @from_gate
  AND from_pos = @from_pos;

-- name: LogHoldWait :exec
-- H1 for a head that waits for an earlier event of its order in
-- outbox_events (LogHoldNext's waits): no attempt, due again after
-- @delay_ms, @error recorded as the hold's last error (what outboxctl
-- shows).
UPDATE outbox_log_holds
SET available_at = now() + @delay_ms::bigint * interval '1 millisecond',
    last_error   = left(@error::text, 1000)
WHERE aggregate_type = @aggregate_type
  AND aggregate_id = @aggregate_id
  AND from_gate = @from_gate
  AND from_pos = @from_pos;

-- name: LogHoldRelease :one
-- H4: the hold caught up with the cursor (LogHoldNext found no head after
-- LogFence's lock, so the cursor cannot have passed a new event of the
-- order meanwhile): deleted, and the partition's epoch armed (mutant
-- log_release_unarmed), so a reader whose view still has the hold cannot
-- advance over the order's events it skipped as the hold's.
WITH del AS (
    DELETE FROM outbox_log_holds
    WHERE aggregate_type = @aggregate_type
      AND aggregate_id = @aggregate_id
      AND from_gate = @from_gate
      AND from_pos = @from_pos
    RETURNING partition
)
UPDATE outbox_log_cursors c
SET epoch = c.epoch + 1
FROM del
WHERE c.partition = del.partition
RETURNING c.epoch;

-- name: LogHoldOutcome :one
-- H3, after LogFence (not @live): the outcome of the head's publish.
-- @outcome 'acked': the hold moves past the head (from = its key + 1),
-- attempts back to 0. 'failed' (the event's own error): quarantined when
-- @permanent or at @max_attempts, else due again after @delay_ms.
-- 'sink' (the sink's fault, see fault.go): the attempt is given back, due
-- again after @delay_ms. Returns whether the hold is quarantined; no row:
-- the hold changed (an operator's command), nothing recorded.
UPDATE outbox_log_holds
SET from_gate      = CASE WHEN @outcome::text = 'acked' THEN @head_gate::bigint ELSE from_gate END,
    from_pos       = CASE WHEN @outcome::text = 'acked' THEN @head_pos::bigint + 1 ELSE from_pos END,
    attempts       = CASE @outcome::text WHEN 'acked' THEN 0
                                         WHEN 'sink' THEN greatest(attempts - 1, 0)
                                         ELSE attempts END,
    quarantined_at = CASE WHEN @outcome::text = 'failed' AND (@permanent::bool OR attempts >= @max_attempts::int)
                          THEN now() END,
    available_at   = CASE WHEN @outcome::text = 'acked' THEN now()
                          ELSE now() + @delay_ms::bigint * interval '1 millisecond' END,
    last_error     = CASE WHEN @outcome::text = 'acked' THEN NULL ELSE left(@error::text, 1000) END
WHERE aggregate_type = @aggregate_type
  AND aggregate_id = @aggregate_id
  AND from_gate = @from_gate
  AND from_pos = @from_pos
RETURNING quarantined_at IS NOT NULL AS quarantined;

-- name: LogListen :exec
LISTEN outbox_log;

-- name: LogWaiting :one
-- In the read's transaction, after a batch shorter than its window: whether
-- committed events of @partition after the cursor (@gate, @pos) wait above
-- the horizon (an older transaction is still open somewhere on the
-- server). The reader then reads again soon instead of at the safety poll:
-- their NOTIFY came and went while they were unreadable.
SELECT EXISTS (
    SELECT 1
    FROM outbox_log
    WHERE partition = @partition
      AND (gate, pos) > (@gate::bigint, @pos::bigint)
      AND gate >= pg_snapshot_xmin(pg_current_snapshot())::text::bigint
) AS waiting;
