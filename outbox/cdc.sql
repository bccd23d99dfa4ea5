-- Statements of the CDC relay source (cdc.go), loaded and bound in sql.go
-- like the others. The stream publishes what the log hands it under a lease
-- of its own (CDCLease, without RelayClaim's search: the log says which
-- events), marks it fenced by that lease, and leaves anything unusual to its
-- sweeper, a polling relay whose claim (RelayClaim) narrows to the events
-- the stream left.

-- name: CDCSort :many
-- Sorts one batch of events the stream received (@event_ids, one statement
-- per batch, never per event) and returns them as the table has them:
-- 'done' when already published or skipped (a re-streamed event after a
-- restart, or one the backfill took), 'sweeper' when the polling path owns
-- it (quarantined, retried, under a lease, replayed, or not yet available),
-- else 'stream'. blockers are the event's unpublished, unskipped
-- predecessors (the lane rule's outbox_unpublished_predecessors, and those
-- in the log, outbox_unpublished_log_predecessors, which the stream never
-- holds): the stream publishes an event only when it holds every one of
-- them itself, and hands the event to the sweeper otherwise. An event cleanup already deleted is
-- not returned.
SELECT e.event_id, e.aggregate_type, e.aggregate_id, e.aggregate_sequence,
       e.event_type, e.schema_version, e.payload, e.occurred_at, e.trace_context,
       CASE WHEN e.published_at IS NOT NULL OR e.skipped_at IS NOT NULL THEN 'done'
            WHEN e.quarantined_at IS NOT NULL
              OR e.attempt_count > 0
              OR e.claim_until >= now()
              OR e.replay_requested_at IS NOT NULL
              OR e.available_at > now() THEN 'sweeper'
            ELSE 'stream' END AS verdict,
       ARRAY(SELECT p.event_id
             FROM outbox_unpublished_predecessors(e.aggregate_type, e.aggregate_id, e.aggregate_sequence) p
             UNION ALL
             SELECT q.event_id
             FROM outbox_unpublished_log_predecessors(e.aggregate_type, e.aggregate_id, e.aggregate_sequence) q
             -- RelayClaim's gate: a never-used log sequence, no log row.
             WHERE (SELECT pg_sequence_last_value('outbox_log_pos') IS NOT NULL)
            )::uuid[] AS blockers
FROM outbox_events e
WHERE e.event_id = ANY(@event_ids::uuid[]);

-- name: CDCLease :many
-- The stream's claim of the events @event_ids it is about to publish (the
-- sort's 'stream' events whose predecessors it holds): a lease of @lease_ms
-- for @owner, the stream's own claimant name (CDCRelay.streamOwner, never
-- the sweeper's). No attempt is counted: the stream's failures are counted
-- when CDCTakeFailed hands them to the sweeper. The lease is what every
-- other claimant and the operator's replay see: RelayClaim's successor-lease
-- probe holds a replayed predecessor back while the stream publishes its
-- successor, and OpsReplayFence (FOR KEY SHARE) waits for this transaction.
-- So the row lock is FOR UPDATE, as RelayClaim's, and SKIP LOCKED: a row a
-- replay's fence holds is not leased and goes to the sweeper. An event that
-- became the polling path's since the sort (retried, replayed, claimed,
-- published, quarantined, skipped) is not leased either.
-- CDCLeaseVerify follows in the same transaction.
WITH candidates AS (
    SELECT e.event_id
    FROM outbox_events e
    WHERE e.event_id = ANY(@event_ids::uuid[])
      AND e.published_at IS NULL
      AND e.quarantined_at IS NULL
      AND e.skipped_at IS NULL
      AND e.attempt_count = 0
      AND e.replay_requested_at IS NULL
      AND e.available_at <= now()
      AND (e.claim_until IS NULL OR e.claim_until < now())
    FOR UPDATE OF e SKIP LOCKED
)
UPDATE outbox_events o
SET claimed_by  = @owner,
    claim_until = now() + @lease_ms::bigint * interval '1 millisecond'
FROM candidates c
WHERE o.event_id = c.event_id
RETURNING o.event_id;

-- name: CDCLeaseVerify :many
-- The lease's verification, a later statement of its transaction, so its
-- snapshot is taken after CDCLease's row locks are held (as
-- RelayClaimVerify's): of the events @event_ids under @owner's lease, every
-- one that has an unpublished, unskipped predecessor that is not under a
-- live lease of @owner (the stream) is given back (lease cleared) and
-- returned with blocked = true; the stream hands it to the sweeper. A
-- predecessor an operator replayed has no lease (OpsReplay clears it), so
-- its successors wait for the replay. The others are returned with their
-- blockers, the predecessors the stream must still hold in its lanes when
-- it queues the event, and a lane shares its deadline: a kept event's lease
-- ends no later than any of its predecessors' (capped), so that when
-- another relay may take an earlier event over after its lease expired, the
-- later one's lease, and with it its publish, has ended too. One statement
-- is enough: an event given back for a predecessor that is not the stream's
-- shares that predecessor with every later event of its order in the batch.
WITH checked AS (
    -- One pass over the predecessors gives the three answers.
    SELECT o.event_id,
           coalesce(p.blockers, '{}')::uuid[] AS blockers,
           coalesce(p.blocked, false)         AS blocked,
           p.lane_deadline
    FROM outbox_events o
    CROSS JOIN LATERAL (
        SELECT array_agg(q.event_id) AS blockers,
               bool_or(q.claimed_by IS DISTINCT FROM @owner
                       OR q.claim_until IS NULL
                       OR q.claim_until < now()) AS blocked,
               min(q.claim_until) AS lane_deadline
        FROM outbox_unpublished_predecessors(o.aggregate_type, o.aggregate_id, o.aggregate_sequence) pr
        JOIN outbox_events q ON q.event_id = pr.event_id
    ) p
    WHERE o.event_id = ANY(@event_ids::uuid[])
      AND o.claimed_by = @owner
      AND o.published_at IS NULL
), given_back AS (
    UPDATE outbox_events o
    SET claimed_by  = NULL,
        claim_until = NULL
    FROM checked c
    WHERE o.event_id = c.event_id AND c.blocked
), capped AS (
    UPDATE outbox_events o
    SET claim_until = c.lane_deadline
    FROM checked c
    WHERE o.event_id = c.event_id AND NOT c.blocked
      AND c.lane_deadline < o.claim_until
)
SELECT event_id, blocked, blockers FROM checked;

-- name: CDCMark :many
-- Marks the events @event_ids that the stream published, only where the
-- stream (@owner) still holds them: an event an operator replayed since
-- (OpsReplay clears claimed_by) or that another relay took over after the
-- stream's lease expired is not changed, so a late mark never sets
-- published_at over a replay. claimed_by is kept as the record of who
-- published the event, as RelayMark keeps it.
UPDATE outbox_events
SET published_at        = now(),
    claim_until         = NULL,
    replay_requested_at = NULL
WHERE event_id = ANY(@event_ids::uuid[])
  AND claimed_by = @owner
  AND published_at IS NULL
RETURNING event_id;

-- name: CDCTakeFailed :many
-- Takes the events @event_ids whose publish by the stream (@stream_owner)
-- failed as a claim of @owner, the sweeper (lease @lease_ms, an attempt
-- counted, as RelayClaim counts it), so that RelayFail records the failure
-- exactly as for a polling relay: backoff or quarantine. Only an event the
-- stream still holds, or whose lease has expired with nobody else's since,
-- is taken: one under another relay's live lease, or already published,
-- quarantined or skipped, is not the stream's to record, and neither is one
-- without a lease (claim_until NULL): an operator's retry cleared it, and
-- recording the old failure would undo the retry.
UPDATE outbox_events
SET claimed_by    = @owner,
    claim_until   = now() + @lease_ms::bigint * interval '1 millisecond',
    attempt_count = attempt_count + 1
WHERE event_id = ANY(@event_ids::uuid[])
  AND published_at IS NULL
  AND quarantined_at IS NULL
  AND skipped_at IS NULL
  AND (claimed_by = @stream_owner OR claim_until < now())
RETURNING event_id, attempt_count;

-- name: CDCCreateSlot :one
-- Creates the stream's logical replication slot for the pgoutput plugin and
-- returns its consistent point: every transaction that commits after it is
-- streamed, and every one before it is visible to a backfill that starts
-- after this statement.
SELECT lsn::text FROM pg_create_logical_replication_slot(@slot_name, 'pgoutput');

-- name: CDCDropIdleSlot :many
-- Drops the logical replication slot @slot when no session streams it
-- (a slot nobody streams retains WAL for ever) and returns its name; no
-- row when it does not exist or is active. A slot that became active
-- between the look and the drop makes the drop fail, which the caller
-- reports.
WITH idle AS MATERIALIZED (
    SELECT slot_name FROM pg_replication_slots WHERE slot_name = @slot AND NOT active
)
SELECT idle.slot_name::text AS slot_name
FROM idle, LATERAL pg_drop_replication_slot(idle.slot_name);
