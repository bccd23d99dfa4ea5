-- The test helpers' statements (loaded and bound in sql.go). They read and
-- force outbox rows for tests; no runtime code runs them.

-- name: TestEvents :many
-- The events a Match selects (a zero field selects every value), in each
-- aggregate's sequence order. The bookkeeping's NULL strings read as ''.
SELECT event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, schema_version, payload,
       occurred_at, available_at, coalesce(claimed_by, '') AS claimed_by, claim_until, published_at,
       attempt_count, coalesce(last_error, '') AS last_error, quarantined_at, skipped_at,
       coalesce(skipped_by, '') AS skipped_by, coalesce(skip_reason, '') AS skip_reason, replay_requested_at
FROM outbox_events
WHERE (@event_id::uuid IS NULL OR event_id = @event_id::uuid)
  AND (@aggregate_type::text = '' OR aggregate_type = @aggregate_type::text)
  AND (@aggregate_id::text = '' OR aggregate_id = @aggregate_id::text)
  AND (@event_type::text = '' OR event_type = @event_type::text)
ORDER BY aggregate_type, aggregate_id, aggregate_sequence;

-- name: TestDeleteEvents :execrows
-- The events a Match selects, gone as retention cleanup leaves them.
DELETE FROM outbox_events
WHERE (@event_id::uuid IS NULL OR event_id = @event_id::uuid)
  AND (@aggregate_type::text = '' OR aggregate_type = @aggregate_type::text)
  AND (@aggregate_id::text = '' OR aggregate_id = @aggregate_id::text)
  AND (@event_type::text = '' OR event_type = @event_type::text);

-- name: TestSetOccurred :exec
-- This and the statements below are the changes of Force, one statement
-- each, run in the order given. Times are offsets from the database's
-- clock, in milliseconds.
UPDATE outbox_events
SET occurred_at = now() - @ago_ms::bigint * interval '1 millisecond'
WHERE event_id = ANY(@event_ids::uuid[]);

-- name: TestSetPublished :exec
-- What the relay's mark writes (RelayMark): the lease ends, a replay request
-- is fulfilled.
UPDATE outbox_events
SET published_at        = now() - @ago_ms::bigint * interval '1 millisecond',
    claim_until         = NULL,
    replay_requested_at = NULL
WHERE event_id = ANY(@event_ids::uuid[]);

-- name: TestSetQuarantined :exec
-- What the relay's RelayFail writes for an event out of attempts.
UPDATE outbox_events
SET quarantined_at = now() - @ago_ms::bigint * interval '1 millisecond',
    attempt_count  = @attempts::int,
    last_error     = nullif(@last_error::text, ''),
    claimed_by     = NULL,
    claim_until    = NULL
WHERE event_id = ANY(@event_ids::uuid[]);

-- name: TestSetFailed :exec
-- What the relay's RelayFail writes for a failure it retries.
UPDATE outbox_events
SET attempt_count = @attempts::int,
    last_error    = nullif(@last_error::text, ''),
    available_at  = now() + @retry_in_ms::bigint * interval '1 millisecond',
    claimed_by    = NULL,
    claim_until   = NULL
WHERE event_id = ANY(@event_ids::uuid[]);

-- name: TestSetLeased :exec
-- What the relay's claim writes (RelayClaim): a lease, one more attempt.
UPDATE outbox_events
SET claimed_by    = @owner::text,
    claim_until   = now() + @lease_ms::bigint * interval '1 millisecond',
    attempt_count = attempt_count + 1
WHERE event_id = ANY(@event_ids::uuid[]);

-- name: TestSetSkipped :exec
-- What an operator's skip writes (OpsSkip).
UPDATE outbox_events
SET skipped_at  = now() - @ago_ms::bigint * interval '1 millisecond',
    skipped_by  = @skipped_by::text,
    skip_reason = @skip_reason::text
WHERE event_id = ANY(@event_ids::uuid[]);

-- name: TestSetReplayRequested :exec
-- What an operator's replay writes (OpsReplay).
UPDATE outbox_events
SET published_at        = NULL,
    available_at        = now(),
    attempt_count       = 0,
    claimed_by          = NULL,
    claim_until         = NULL,
    replay_requested_at = now()
WHERE event_id = ANY(@event_ids::uuid[]);

-- name: TestHolders :many
-- Who holds the events that a waiting test has not seen delivered, by
-- state: published (by which relay, when), leased (by which relay, until
-- when), quarantined (the last error), skipped, or pending (no relay has
-- claimed it), with counts; the oldest example of each.
SELECT state, count(*) AS events, coalesce(min(holder), '') AS holder, coalesce(min(detail), '') AS detail
FROM (
    SELECT CASE
               WHEN published_at IS NOT NULL THEN 'published'
               WHEN skipped_at IS NOT NULL THEN 'skipped'
               WHEN quarantined_at IS NOT NULL THEN 'quarantined'
               WHEN claim_until > now() THEN 'leased'
               ELSE 'pending'
           END AS state,
           claimed_by AS holder,
           CASE
               WHEN quarantined_at IS NOT NULL THEN last_error
               WHEN claim_until > now() THEN 'until ' || claim_until::text
               WHEN published_at IS NOT NULL THEN 'at ' || published_at::text
               WHEN attempt_count > 0 THEN attempt_count::text || ' failed attempts, last: ' || coalesce(last_error, '')
           END AS detail
    FROM outbox_events
) e
GROUP BY state
ORDER BY state;
