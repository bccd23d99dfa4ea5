-- Statements of the switch to the log source (LogSwitch, log_switch.go),
-- bound there: what outbox_events still holds that a poll relay must
-- publish before the log's reader starts.

-- name: LogSwitchLeft :one
-- unpublished: events of outbox_events neither published, skipped nor
-- quarantined, and skipped ones whose tombstone is not out (what the
-- draining poll relay still has to publish); quarantined: those waiting
-- for an operator. Only unpublished rows are visited, through the dispatch
-- index's partial predicate.
SELECT count(*) FILTER (WHERE quarantined_at IS NULL OR skipped_at IS NOT NULL)     AS unpublished,
       count(*) FILTER (WHERE quarantined_at IS NOT NULL AND skipped_at IS NULL) AS quarantined
FROM outbox_events
WHERE published_at IS NULL
  AND (skipped_at IS NULL OR skip_published_at IS NULL);

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
-- for the horizon), and holds, the orders under a hold that is not
-- quarantined (a failed event in backoff, a replay); quarantined, the holds
-- waiting for an operator; used, whether the log was ever written (an event
-- in it, or a cursor moved): a database whose producers never wrote to the
-- log runs no log relay at all.
SELECT (SELECT count(*)
        FROM outbox_log_cursors c
        JOIN outbox_log l ON l.partition = c.partition AND (l.gate, l.pos) > (c.gate, c.pos)) AS pending,
       (SELECT count(*) FROM outbox_log_holds WHERE quarantined_at IS NULL) AS holds,
       (SELECT count(*) FROM outbox_log_holds WHERE quarantined_at IS NOT NULL) AS quarantined,
       EXISTS (SELECT 1 FROM outbox_log) OR EXISTS (SELECT 1 FROM outbox_log_cursors WHERE pos > 0) AS used;
