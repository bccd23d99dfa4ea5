package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/internal/namedsql"
)

// relayQueries are the relay's statements (relay.sql).
var relayQueries = namedsql.MustLoad(sqlFiles, "relay.sql")

// claimed is an event this relay holds a lease on.
type claimed struct {
	Event
	// attempt is the event's attempt_count including this claim.
	attempt int
	// tookOver is true when the claim took over another relay's expired lease.
	tookOver bool
}

// claim takes a batch of claimable events (see RelayClaim in relay.sql) in
// one statement and returns them with the lease's local deadline.
func (r *Relay) claim(ctx context.Context) ([]claimed, lease, error) {
	// The local deadline is measured from before the statement is sent, so it
	// ends no later than claim_until, which the database computes from its
	// own now() at claim time.
	l := newLease(time.Now(), r.cfg.Lease)
	rows, err := r.pool.Query(ctx, relayQueries.Get("RelayClaim"), r.cfg.Owner, r.cfg.BatchSize, r.cfg.Lease.Milliseconds(), r.cfg.MaxAttempts)
	if err != nil {
		return nil, l, fmt.Errorf("outbox: claim: %w", err)
	}
	batch, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (claimed, error) {
		var (
			c       claimed
			id      uuid.UUID
			payload []byte
			version int32
			attempt int32
		)
		err := row.Scan(&id, &c.AggregateType, &c.AggregateID, &c.Sequence, &c.Type, &version,
			&payload, &c.OccurredAt, &attempt, &c.tookOver, &c.Replay)
		c.ID, c.Payload, c.SchemaVersion, c.attempt = id, payload, int(version), int(attempt)
		return c, err
	})
	if err != nil {
		return nil, l, fmt.Errorf("outbox: claim: %w", err)
	}
	for _, c := range batch {
		if c.tookOver {
			r.metrics.expiredLeases.Inc()
		}
	}
	return batch, l, nil
}
