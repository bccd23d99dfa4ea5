-- The circuit breaker's record (breaker.go): a relay whose breaker on its
-- sink is open has a row in outbox_sink_breakers (migration 00021), which
-- the operator's status reads. Loaded and bound in sql.go.

-- name: BreakerOpen :exec
-- The relay @owner's breaker on its sink is open since @opened_at after
-- @last_error: its row in outbox_sink_breakers, probed now, until
-- BreakerClosed. A relay without a probe publishes to probe: its breaker
-- opens again while the row is there, which keeps the outage's start and
-- counts one probe more. Rows of relays that stopped probing an hour ago
-- (a process that died with its breaker open) are deleted on the way.
WITH stale AS (
    DELETE FROM outbox_sink_breakers WHERE probed_at < now() - interval '1 hour' AND owner <> @owner
)
INSERT INTO outbox_sink_breakers (owner, opened_at, probed_at, probes, last_error)
VALUES (@owner, @opened_at, now(), 0, nullif(@last_error, ''))
ON CONFLICT (owner) DO UPDATE
SET probed_at = excluded.probed_at, probes = outbox_sink_breakers.probes + 1, last_error = excluded.last_error;

-- name: BreakerProbed :exec
-- A probe of the relay @owner's sink failed with @last_error.
UPDATE outbox_sink_breakers
SET probed_at = now(), probes = probes + 1, last_error = nullif(@last_error, '')
WHERE owner = @owner;

-- name: BreakerClosed :exec
-- The relay @owner's sink answers again (a probe succeeded, or without a
-- probe the sink acknowledged a publish) or the relay stopped probing: its
-- row goes.
DELETE FROM outbox_sink_breakers WHERE owner = @owner;
