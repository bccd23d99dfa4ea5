package outbox

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/internal/relaysql"
)

// claimed is an event this relay holds a lease on.
type claimed struct {
	Event
	// attempt is the event's attempt_count including this claim.
	attempt int
	// tookOver is true when the claim took over another relay's expired lease.
	tookOver bool
}

// batchSender is where the claim's statements run: a connection, or a
// transaction (a test's).
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// claim takes a batch of claimable events in one short transaction of two
// statements, RelayClaim then RelayClaimVerify (see
// outbox/internal/relaysql/relay.sql: the second gives back what an operator's
// concurrent replay made unclaimable), and
// returns them with the lease's local deadline. The transaction costs two
// round trips, BEGIN and the claim pipelined in the first, the
// verification and COMMIT in the second.
//
// all makes a CDC relay's sweeper claim like a polling relay, young events
// included (its backfill); a polling relay ignores it.
func (r *pollRelay) claim(ctx context.Context, all bool) ([]claimed, lease, error) {
	return r.claimN(ctx, all, r.cfg.BatchSize, nil)
}

// claimN is claim of at most n events (at most BatchSize), none of held.
func (r *pollRelay) claimN(ctx context.Context, all bool, n int, held []uuid.UUID) ([]claimed, lease, error) {
	// The local deadline is measured from before the statement is sent, so it
	// ends no later than claim_until, which the database computes from its
	// own now() at claim time.
	l := newLease(time.Now(), r.cfg.Lease)
	conn, err := r.pool.Acquire(ctx)
	if err != nil {
		return nil, l, fmt.Errorf("outbox: claim: %w", err)
	}
	// A connection an error left inside the transaction is closed rather
	// than reused (pgxpool checks), which rolls the claim back.
	defer conn.Release()
	batch, err := r.claimOn(ctx, conn.Conn(), true, all, min(n, r.cfg.BatchSize), held)
	if err != nil {
		return nil, l, err
	}
	return batch, l, nil
}

// claimOn runs the claim's statements on c. own says whether c is outside
// any transaction, so that the claim begins and commits its own; otherwise
// c's transaction is the caller's to end.
func (r *pollRelay) claimOn(ctx context.Context, c batchSender, own, all bool, n int, held []uuid.UUID) ([]claimed, error) {
	var batch []claimed
	b := &pgx.Batch{}
	if own {
		b.Queue("BEGIN")
	}
	args := claimArgs(r.cfg.Owner, &r.cfg)
	args.BatchSize = n
	args.Held = held
	if r.sweep != nil && !all {
		args.MinAgeMS, args.HandedOff = r.sweep.filter()
	}
	qRelayClaim.Queue(b, args).Query(func(rows pgx.Rows) error {
		claims, err := qRelayClaim.Collect(rows)
		if err != nil {
			return err
		}
		batch = make([]claimed, len(claims))
		for i, c := range claims {
			batch[i] = c.claimed()
		}
		return nil
	})
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("outbox: claim: %w", err)
	}

	// The verification is a new statement, so under READ COMMITTED it reads
	// a new snapshot, taken after RelayClaim's row locks are held.
	var released []uuid.UUID
	b = &pgx.Batch{}
	if len(batch) > 0 {
		ids := make([]uuid.UUID, len(batch))
		for i, e := range batch {
			ids[i] = e.ID
		}
		qRelayClaimVerify.Queue(b, relaysql.EventsArgs{Owner: r.cfg.Owner, EventIDs: ids}).Query(func(rows pgx.Rows) error {
			var err error
			released, err = qRelayClaimVerify.Collect(rows)
			return err
		})
	}
	if own {
		// Even an empty claim commits: RelayClaim may have quarantined
		// abandoned events.
		b.Queue("COMMIT")
	}
	if b.Len() > 0 {
		if err := c.SendBatch(ctx, b).Close(); err != nil {
			return nil, fmt.Errorf("outbox: claim: verifying %d claims: %w", len(batch), err)
		}
	}

	for _, e := range batch {
		if e.tookOver {
			r.metrics.expiredLeases.Inc()
		}
	}
	if r.sweep != nil {
		r.sweep.claimed(batch)
	}
	if len(released) > 0 {
		// Rare (a replay committed while this claim was running) and
		// harmless: the events wait their turn in their lane.
		r.cfg.Logger.Debug("outbox relay: gave back claims found blocked by an operator's replay that committed during the claim",
			"owner", r.cfg.Owner, "events", released)
		batch = slices.DeleteFunc(batch, func(e claimed) bool { return slices.Contains(released, e.ID) })
	}
	return batch, nil
}

// claimArgs are RelayClaim's arguments for a claim by owner under cfg: the
// relay's own, and the benchmark's (outbox/outboxtest/outboxbench).
func claimArgs(owner string, cfg *RelayConfig) relaysql.ClaimArgs {
	return relaysql.ClaimArgs{
		Owner:       owner,
		BatchSize:   cfg.BatchSize,
		LeaseMS:     cfg.Lease.Milliseconds(),
		MaxAttempts: cfg.MaxAttempts,
	}
}

func (c claimRow) claimed() claimed {
	e := c.event()
	e.Replay, e.Skipped = c.Replay, c.Skipped
	return claimed{Event: e, attempt: c.AttemptCount, tookOver: c.TookOver}
}
