-- Statements of the log source's retention (RetainLog, log_retention.go),
-- bound in log_retention.go: model/log.pml's T1-T4 (model/README.md, "The
-- log source"). The partitions are made and dropped by the functions of
-- migration 00014 (outbox_log_extend, outbox_log_range_drop), which spell
-- their names with format(); the one statement RetainLog sends as text is
-- the DETACH ... CONCURRENTLY that LogRetiring spells, as it cannot run in
-- a function or a transaction block.

-- name: LogExtend :one
-- T1: makes ranges until @ahead whole ranges lie beyond outbox_log_pos.
SELECT outbox_log_extend(@ahead::int) AS made;

-- name: LogPassed :one
-- T2's first statement: the last position outbox_log_pos handed out (the
-- sequence's CACHE is 1, so no session holds positions below it for later).
-- The seal that follows is a statement of its own: its snapshot must be
-- taken after this read, so that every transaction that took a position
-- below it already has an xid below the snapshot's xmax.
SELECT last_value AS passed FROM outbox_log_pos;

-- name: LogSeal :many
-- T2: seals the ranges the sequence has passed (hi <= @passed): no later
-- position falls in them, and every transaction that took one has an xid
-- below this statement's snapshot's xmax (LogPassed ran before it). Returns
-- the ranges sealed.
UPDATE outbox_log_ranges
SET sealed_at = now(), sealed_xmax = pg_snapshot_xmax(pg_current_snapshot())::text::bigint
WHERE sealed_at IS NULL
  AND hi <= @passed::bigint
RETURNING lo;

-- name: LogRetireLock :exec
-- T3's first statement: share-locks every cursor row, so no cursor moves
-- and no operator's replay (LogOpReplayLock locks its partition's cursor
-- row) makes a hold while the rule is checked; a replay that comes after
-- sees the range retiring and refuses it (LogOpReplay).
SELECT partition FROM outbox_log_cursors ORDER BY partition FOR SHARE;

-- name: LogRetire :many
-- T3, after LogRetireLock: marks retiring every range that passes the rule
-- (model/log.pml's RETIRE): sealed, with every transaction that could have
-- written into it ended (sealed_xmax at or below this snapshot's xmin;
-- mutant log_retire_unsealed); sealed longer than @retention_ms ago (the
-- log's retention, OUTFLOW_RETENTION); no row of it after its partition's
-- cursor in key order (gate, pos) (a row with a low pos but a high gate may
-- be unread while the cursor's pos is past it; mutant log_retire_by_pos: 16
-- index probes through outbox_log_read_idx); no row of it owned by a hold
-- (key at or after the hold's from: a failed event's order, or a replay;
-- mutant log_retire_held).
-- Returns the ranges marked.
UPDATE outbox_log_ranges r
SET retiring_at = now()
WHERE r.sealed_at IS NOT NULL
  AND r.retiring_at IS NULL
  AND r.sealed_at < now() - @retention_ms::bigint * interval '1 millisecond'
  AND r.sealed_xmax <= pg_snapshot_xmin(pg_current_snapshot())::text::bigint
  AND NOT EXISTS (
      SELECT 1
      FROM outbox_log_cursors c
      WHERE EXISTS (
          SELECT 1 FROM outbox_log l
          WHERE l.partition = c.partition
            AND (l.gate, l.pos) > (c.gate, c.pos)
            AND l.pos >= r.lo AND l.pos < r.hi))
  AND NOT EXISTS (
      SELECT 1
      FROM outbox_log_holds h
      JOIN outbox_log l ON l.aggregate_type = h.aggregate_type
                       AND l.aggregate_id = h.aggregate_id
                       AND (l.gate, l.pos) >= (h.from_gate, h.from_pos)
      WHERE l.pos >= r.lo AND l.pos < r.hi)
RETURNING r.lo;

-- name: LogRetiring :many
-- T4: the retiring ranges not dropped yet, oldest first, with the state of
-- their partition: attached (still a partition of outbox_log), pending (a
-- DETACH ... CONCURRENTLY that was interrupted: FINALIZE completes it), and
-- the statements that detach it, spelled here with format().
SELECT r.lo, r.name,
       i.inhrelid IS NOT NULL AS attached,
       coalesce(i.inhdetachpending, false) AS pending,
       format('ALTER TABLE outbox_log DETACH PARTITION %I CONCURRENTLY', r.name) AS detach,
       format('ALTER TABLE outbox_log DETACH PARTITION %I FINALIZE', r.name) AS finalize
FROM outbox_log_ranges r
LEFT JOIN pg_inherits i ON i.inhrelid = to_regclass(r.name)
WHERE r.retiring_at IS NOT NULL
  AND r.dropped_at IS NULL
ORDER BY r.lo;

-- name: LogRangeDrop :one
-- T4's last step: drops the detached partition of the range at @lo and
-- records it dropped (outbox_log_range_drop).
SELECT outbox_log_range_drop(@lo::bigint) AS dropped;

-- name: LogRanges :one
-- The ranges for the gauges and outboxctl status: kept (not dropped), ahead
-- (made wholly beyond outbox_log_pos: an enqueue fails once none is left
-- and the current range is full), the oldest kept range's creation, and the
-- log's retention horizon (the newest seal of a range dropped or retiring,
-- which a pass drops: events before it may be gone, and a replay from one
-- of them is refused).
SELECT count(*) FILTER (WHERE dropped_at IS NULL) AS kept,
       count(*) FILTER (WHERE dropped_at IS NULL AND lo > (SELECT last_value FROM outbox_log_pos)) AS ahead,
       min(created_at) FILTER (WHERE dropped_at IS NULL) AS oldest_kept,
       max(sealed_at) FILTER (WHERE retiring_at IS NOT NULL) AS horizon
FROM outbox_log_ranges;

-- name: LogRetentionTryLock :one
-- RetainLog's session-level advisory lock ("outflowT" read as a big-endian
-- integer), so that one pass runs at a time across processes.
SELECT pg_try_advisory_lock(8031453493739878228) AS locked;

-- name: LogRetentionUnlock :one
SELECT pg_advisory_unlock(8031453493739878228) AS unlocked;
