-- The operator's commands and views of the log source (log_commands.go,
-- log_views.go): model/log.pml's O1-O3 and what outboxctl status, list, show,
-- retry and replay read. Every command on a hold first locks its partition's
-- cursor row (LogOpLock, LogOpReplayLock), as the relay's own changes of the
-- holds do (outbox/log.sql); the views read only and lock nothing.

-- name: LogOpLock :many
-- The first statement of an operator's command on the hold of
-- @aggregate_type/@aggregate_id: locks its partition's cursor row (the one
-- every change of the partition's holds locks first) and returns the
-- cursor.
SELECT gate, pos
FROM outbox_log_cursors
WHERE partition = outbox_log_partition(@aggregate_type, @aggregate_id)
FOR UPDATE;

-- name: LogOpRetry :many
-- O1: a quarantined hold out of quarantine, attempts back to 0, due now.
-- The epoch is not armed: the hold stays, only its quarantine goes.
UPDATE outbox_log_holds
SET quarantined_at = NULL, attempts = 0, available_at = now()
WHERE aggregate_type = @aggregate_type
  AND aggregate_id = @aggregate_id
  AND quarantined_at IS NOT NULL
RETURNING partition;

-- name: LogOpSkip :many
-- O2: a quarantined hold's head (its first event with from <= key <= the
-- cursor (@gate, @pos)) is recorded skipped in outbox_log_skips by @skipped_by
-- for @reason and never published; the hold leaves quarantine, attempts 0,
-- and stays at it: its worker publishes the head's tombstone (LogHoldNext's
-- skipped) and then moves past it, so the tombstone comes before the
-- order's later events. A replay's head at or behind the cursor the replay
-- saw (replay_gate, replay_pos) is a redelivery of an event delivered
-- before: its skip gives up that redelivery only, records no skip (the
-- event stays published, its consumers had it: no tombstone; a later
-- replay delivers it again) and moves the hold past it. Returns the head
-- (NULL: the hold had no head; it only leaves quarantine, and the hold
-- worker releases it) and whether it was a redelivery.
WITH h AS (
    SELECT aggregate_type, aggregate_id, from_gate, from_pos, replay_gate, replay_pos
    FROM outbox_log_holds
    WHERE aggregate_type = @aggregate_type
      AND aggregate_id = @aggregate_id
      AND quarantined_at IS NOT NULL
), head AS (
    SELECT l.event_id, l.gate, l.pos,
           coalesce((l.gate, l.pos) <= (h.replay_gate, h.replay_pos), false) AS redelivery
    FROM h, outbox_log l
    WHERE l.aggregate_type = h.aggregate_type
      AND l.aggregate_id = h.aggregate_id
      AND (l.gate, l.pos) >= (h.from_gate, h.from_pos)
      AND (l.gate, l.pos) <= (@gate::bigint, @pos::bigint)
    ORDER BY l.gate, l.pos
    LIMIT 1
), rec AS (
    INSERT INTO outbox_log_skips (event_id, pos, skipped_by, reason)
    SELECT event_id, pos, @skipped_by, @reason FROM head WHERE NOT redelivery
    RETURNING event_id
)
UPDATE outbox_log_holds o
SET from_gate      = CASE WHEN head.redelivery THEN head.gate ELSE o.from_gate END,
    from_pos       = CASE WHEN head.redelivery THEN head.pos + 1 ELSE o.from_pos END,
    quarantined_at = NULL,
    attempts       = 0,
    available_at   = now()
FROM h LEFT JOIN head ON true
WHERE o.aggregate_type = h.aggregate_type
  AND o.aggregate_id = h.aggregate_id
RETURNING head.event_id, coalesce(head.redelivery, false) AS redelivery;

-- name: LogOpReplayLock :many
-- The first statement of an operator's replay (O3): locks the cursor row of
-- the partition of @aggregate_type/@aggregate_id and arms its epoch in the
-- replay's transaction (mutant log_replay_unarmed: a reader whose view
-- lacks the new hold must not advance over the order's events), returning
-- the cursor.
UPDATE outbox_log_cursors
SET epoch = epoch + 1
WHERE partition = outbox_log_partition(@aggregate_type, @aggregate_id)
RETURNING gate, pos;

-- name: LogOpHeld :one
-- Whether the order has a hold: a replay is refused while it has (its
-- events are not all published yet).
SELECT EXISTS (
    SELECT 1 FROM outbox_log_holds WHERE aggregate_type = @aggregate_type AND aggregate_id = @aggregate_id
) AS held;

-- name: LogOpReplay :many
-- O3, after LogOpReplayLock, and after LogOpEvents found the event of
-- @sequence at a position no retiring range ends after (retiring: LogRetire
-- marks a range under LogRetireLock, which LogOpReplayLock waited for, and
-- no range retires while the hold made here owns its events;
-- model/log.pml's RETIRE): a hold for the order from that event, which
-- starts no later than just after the cursor (@gate, @pos) (model/README.md,
-- what the model found, 2: a replay of an event the cursor has not passed
-- yet would otherwise leave an earlier event of the order behind a hold
-- that does not own it), attempts 0; its events up to the cursor are
-- delivered again as replays, those an operator skipped as their
-- tombstones only (LogHoldNext's skipped). No row: no such event.
INSERT INTO outbox_log_holds (aggregate_type, aggregate_id, partition, from_gate, from_pos, attempts,
                              replay_gate, replay_pos)
SELECT l.aggregate_type, l.aggregate_id, l.partition,
       CASE WHEN (l.gate, l.pos) <= (@gate::bigint, @pos::bigint) THEN l.gate ELSE @gate::bigint END,
       CASE WHEN (l.gate, l.pos) <= (@gate::bigint, @pos::bigint) THEN l.pos ELSE @pos::bigint + 1 END,
       0, @gate::bigint, @pos::bigint
FROM outbox_log l
WHERE l.aggregate_type = @aggregate_type
  AND l.aggregate_id = @aggregate_id
  AND l.aggregate_sequence = @sequence
RETURNING from_gate AS gate, from_pos AS pos;

-- name: LogHolds :many
-- The holds of every partition, for the operator and the tests: the order,
-- its partition, where it starts, its attempts and quarantine.
SELECT aggregate_type, aggregate_id, partition, from_gate, from_pos, attempts,
       quarantined_at IS NOT NULL AS quarantined, coalesce(last_error, '') AS last_error,
       replay_gate IS NOT NULL AS replay
FROM outbox_log_holds
ORDER BY partition, aggregate_type, aggregate_id;

-- name: LogOpPartitions :many
-- Every partition's cursor and lease, with its events after the cursor
-- (pending: readable or waiting for the horizon) and its holds; used says
-- whether the log was ever written (an event in it, or a cursor moved).
SELECT c.partition, c.gate, c.pos, c.owner, c.lease_until, c.epoch, c.tries, c.advanced_at,
       (SELECT count(*) FROM outbox_log l
        WHERE l.partition = c.partition AND (l.gate, l.pos) > (c.gate, c.pos)) AS pending,
       (SELECT count(*) FROM outbox_log_holds h WHERE h.partition = c.partition) AS holds,
       (SELECT count(*) FROM outbox_log_holds h
        WHERE h.partition = c.partition AND h.quarantined_at IS NOT NULL) AS quarantined,
       EXISTS (SELECT 1 FROM outbox_log) OR EXISTS (SELECT 1 FROM outbox_log_cursors WHERE pos > 0) AS used,
       now() AS db_now
FROM outbox_log_cursors c
ORDER BY c.partition;

-- name: LogOpQuarantined :many
-- The quarantined holds quarantined at or after @quarantined_since (any time
-- when NULL) and at or before @until (any when NULL), whose last_error
-- contains @error_contains ignoring case (any when ''), of aggregate type
-- @aggregate_type (any when ''), oldest quarantine first, each with its
-- head (the event the hold worker publishes next, the one a skip gives up:
-- its first event with from <= key <= the cursor; NULL: none left).
SELECT h.aggregate_type, h.aggregate_id, h.partition, h.attempts, coalesce(h.last_error, '') AS last_error,
       h.quarantined_at, h.replay_gate IS NOT NULL AS replay,
       head.event_id, head.aggregate_sequence, head.event_type, head.occurred_at
FROM outbox_log_holds h
JOIN outbox_log_cursors c ON c.partition = h.partition
LEFT JOIN LATERAL (
    SELECT l.event_id, l.aggregate_sequence, l.event_type, l.occurred_at
    FROM outbox_log l
    WHERE l.aggregate_type = h.aggregate_type
      AND l.aggregate_id = h.aggregate_id
      AND (l.gate, l.pos) >= (h.from_gate, h.from_pos)
      AND (l.gate, l.pos) <= (c.gate, c.pos)
    ORDER BY l.gate, l.pos
    LIMIT 1
) head ON true
WHERE h.quarantined_at IS NOT NULL
  AND (@quarantined_since::timestamptz IS NULL OR h.quarantined_at >= @quarantined_since)
  AND (@until::timestamptz IS NULL OR h.quarantined_at <= @until)
  AND (@error_contains = '' OR strpos(lower(coalesce(h.last_error, '')), lower(@error_contains)) > 0)
  AND (@aggregate_type = '' OR h.aggregate_type = @aggregate_type)
ORDER BY h.quarantined_at, h.aggregate_type, h.aggregate_id;

-- name: LogOpEvents :many
-- Log events with their state for the operator: the events @event_ids (when
-- not NULL, through outbox_log_event_idx) or the events of the order
-- @aggregate_type/@aggregate_id (through outbox_log_lane_idx), in key
-- order. passed: the partition's cursor is at or after it; held: its
-- order's hold owns it (key >= the hold's from); head: it is the event the
-- hold publishes next (its first one up to the cursor; of a skipped one,
-- its tombstone); redelivery: the hold is a replay's and it is at or behind
-- the cursor the replay saw (delivered before); retiring: a range
-- retention is dropping (or dropped) ends after its position, so a replay
-- from it is refused (its order's later events may be in that range).
SELECT l.event_id, l.pos, l.gate, l.partition, l.aggregate_type, l.aggregate_id, l.aggregate_sequence,
       l.event_type, l.schema_version, l.occurred_at,
       (l.gate, l.pos) <= (c.gate, c.pos) AS passed,
       coalesce((l.gate, l.pos) >= (h.from_gate, h.from_pos), false) AS held,
       h.quarantined_at, coalesce(h.attempts, 0) AS attempts, coalesce(h.last_error, '') AS last_error,
       coalesce(h.replay_gate IS NOT NULL, false) AS replay,
       coalesce(head.pos = l.pos, false) AS head,
       coalesce((l.gate, l.pos) >= (h.from_gate, h.from_pos) AND (l.gate, l.pos) <= (h.replay_gate, h.replay_pos),
                false) AS redelivery,
       coalesce(l.pos < (SELECT max(r.hi) FROM outbox_log_ranges r WHERE r.retiring_at IS NOT NULL), false) AS retiring,
       s.skipped_at, s.skipped_by, s.reason AS skip_reason
FROM outbox_log l
JOIN outbox_log_cursors c ON c.partition = l.partition
LEFT JOIN outbox_log_holds h ON h.aggregate_type = l.aggregate_type AND h.aggregate_id = l.aggregate_id
LEFT JOIN LATERAL (
    SELECT f.pos
    FROM outbox_log f
    WHERE f.aggregate_type = h.aggregate_type
      AND f.aggregate_id = h.aggregate_id
      AND (f.gate, f.pos) >= (h.from_gate, h.from_pos)
      AND (f.gate, f.pos) <= (c.gate, c.pos)
    ORDER BY f.gate, f.pos
    LIMIT 1
) head ON true
LEFT JOIN outbox_log_skips s ON s.pos = l.pos
WHERE (@event_ids::uuid[] IS NOT NULL AND l.event_id = ANY (@event_ids::uuid[]))
   OR (@event_ids::uuid[] IS NULL AND l.aggregate_type = @aggregate_type AND l.aggregate_id = @aggregate_id)
ORDER BY l.gate, l.pos;

-- name: LogOpPending :many
-- The ids and keys of the log's unpublished events that wait for no
-- operator, oldest key first, at most @max_events (LogOpEvents then
-- reports them): those after their partition's cursor (pending), and those
-- a hold that is not quarantined owns (held: its worker publishes them
-- after a backoff). Of aggregate type @aggregate_type and aggregate
-- @aggregate_id (any when ''); with @after_set, only those after the key
-- (@after_gate, @after_pos): a keyset page. The events after a cursor are
-- read per partition through outbox_log_read_idx, at most @max_events
-- each, so a long backlog costs no more than the answer.
SELECT cand.event_id, cand.gate, cand.pos
FROM (
    SELECT a.event_id, a.gate, a.pos
    FROM outbox_log_cursors c
    CROSS JOIN LATERAL (
        SELECT l.event_id, l.gate, l.pos
        FROM outbox_log l
        WHERE l.partition = c.partition
          AND (l.gate, l.pos) > (c.gate, c.pos)
          AND (NOT @after_set::bool OR (l.gate, l.pos) > (@after_gate::bigint, @after_pos::bigint))
          AND (@aggregate_type = '' OR l.aggregate_type = @aggregate_type)
          AND (@aggregate_id = '' OR l.aggregate_id = @aggregate_id)
        ORDER BY l.gate, l.pos
        LIMIT @max_events
    ) a
    UNION ALL
    SELECT l.event_id, l.gate, l.pos
    FROM outbox_log_holds h
    JOIN outbox_log_cursors c ON c.partition = h.partition
    JOIN outbox_log l ON l.aggregate_type = h.aggregate_type
                     AND l.aggregate_id = h.aggregate_id
                     AND (l.gate, l.pos) >= (h.from_gate, h.from_pos)
                     AND (l.gate, l.pos) <= (c.gate, c.pos)
    WHERE h.quarantined_at IS NULL
      AND (NOT @after_set::bool OR (l.gate, l.pos) > (@after_gate::bigint, @after_pos::bigint))
      AND (@aggregate_type = '' OR h.aggregate_type = @aggregate_type)
      AND (@aggregate_id = '' OR h.aggregate_id = @aggregate_id)
      AND NOT EXISTS (SELECT 1 FROM outbox_log_skips s WHERE s.pos = l.pos)
) cand
ORDER BY cand.gate, cand.pos
LIMIT @max_events;
