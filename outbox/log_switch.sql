-- Statements of the switch to the log source (LogSwitch, log_switch.go),
-- bound there: what outbox_events still holds that a poll relay must
-- publish before the log's reader starts.

-- name: LogSwitchLeft :one
-- unpublished: events of outbox_events neither published, skipped nor
-- quarantined, and skipped ones whose tombstone is not out, that the
-- draining poll relay can publish now or soon: not
-- behind a quarantined event of their order (a lane waits for its
-- quarantined event, and an operator may take days), and with no earlier
-- event of their order unpublished in the log (the log's reader, which
-- starts after the drain, publishes that one first). quarantined: those
-- waiting for an operator; behind: the unpublished events the drain does
-- not wait for (behind a quarantined event, or behind the log). Only
-- unpublished rows are visited, through the dispatch index's partial
-- predicate.
SELECT count(*) FILTER (WHERE (e.quarantined_at IS NULL OR e.skipped_at IS NOT NULL) AND NOT w.behind) AS unpublished,
       count(*) FILTER (WHERE e.quarantined_at IS NOT NULL AND e.skipped_at IS NULL) AS quarantined,
       count(*) FILTER (WHERE e.quarantined_at IS NULL AND w.behind)     AS behind
FROM outbox_events e
CROSS JOIN LATERAL (
    SELECT e.quarantined_at IS NULL AND (
               EXISTS (SELECT 1
                       FROM outbox_events q
                       WHERE q.aggregate_type = e.aggregate_type
                         AND q.aggregate_id = e.aggregate_id
                         AND q.aggregate_sequence < e.aggregate_sequence
                         AND q.published_at IS NULL
                         AND q.skipped_at IS NULL
                         AND q.quarantined_at IS NOT NULL)
            OR EXISTS (SELECT 1
                       FROM outbox_unpublished_log_predecessors(e.aggregate_type, e.aggregate_id, e.aggregate_sequence))
           ) AS behind
) w
WHERE e.published_at IS NULL
  AND (e.skipped_at IS NULL OR e.skip_published_at IS NULL);

-- name: LogSwitchQuarantined :many
-- The quarantined events left in outbox_events, oldest order first, at
-- most @max_rows of them, named in the switch's error line.
SELECT event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type,
       coalesce(last_error, '') AS last_error
FROM outbox_events
WHERE published_at IS NULL
  AND skipped_at IS NULL
  AND quarantined_at IS NOT NULL
ORDER BY aggregate_type, aggregate_id, aggregate_sequence
LIMIT @max_rows;

-- name: LogLeaveLeft :one
-- What the log holds that a log relay must publish before a poll or cdc
-- relay reads outbox_events again (LogLeave, log_leave.go): pending, the
-- committed events after their partition's cursor (readable or waiting
-- for the horizon), and holds, the orders under a hold that is neither
-- quarantined nor waiting for an earlier event of its order in
-- outbox_events (a failed event in backoff, a replay); quarantined, the
-- holds waiting for an operator; behind, the holds waiting for
-- outbox_events (its relay, which starts after the drain, publishes that
-- event first); used, whether the log was ever written (an event in it,
-- or a cursor moved): a database whose producers never wrote to the log
-- runs no log relay until they do (LogLeaveUsed).
WITH holds AS (
    SELECT h.quarantined_at IS NOT NULL AS quarantined,
           EXISTS (SELECT 1 FROM outbox_unpublished_predecessors(h.aggregate_type, h.aggregate_id, head.aggregate_sequence)) AS behind
    FROM outbox_log_holds h
    CROSS JOIN LATERAL (
        SELECT min(l.aggregate_sequence) AS aggregate_sequence
        FROM outbox_log l
        WHERE l.aggregate_type = h.aggregate_type
          AND l.aggregate_id = h.aggregate_id
          AND (l.gate, l.pos) >= (h.from_gate, h.from_pos)
    ) head
)
SELECT (SELECT count(*)
        FROM outbox_log_cursors c
        JOIN outbox_log l ON l.partition = c.partition AND (l.gate, l.pos) > (c.gate, c.pos)) AS pending,
       (SELECT count(*) FROM holds WHERE NOT quarantined AND NOT behind) AS holds,
       (SELECT count(*) FROM holds WHERE quarantined) AS quarantined,
       (SELECT count(*) FROM holds WHERE NOT quarantined AND behind) AS behind,
       EXISTS (SELECT 1 FROM outbox_log) OR EXISTS (SELECT 1 FROM outbox_log_cursors WHERE pos > 0) AS used;

-- name: LogLeaveUsed :one
-- Whether the log was ever written (LogLeaveLeft's used): a poll or cdc
-- starter that found it unused at start asks every LogSwitchCheckInterval,
-- so that an event a producer writes to the log later is not stranded.
SELECT EXISTS (SELECT 1 FROM outbox_log) OR EXISTS (SELECT 1 FROM outbox_log_cursors WHERE pos > 0) AS used;
