package outbox

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Statement-level hooks for the lease-fencing tests.

func (r *Relay) ClaimForTest(ctx context.Context) (events []Event, tookOver []bool, err error) {
	batch, _, err := r.claim(ctx)
	for _, c := range batch {
		events = append(events, c.Event)
		tookOver = append(tookOver, c.tookOver)
	}
	return events, tookOver, err
}

func (r *Relay) MarkForTest(ctx context.Context, ids ...uuid.UUID) (int, error) {
	marked, err := r.mark(ctx, ids)
	return len(marked), err
}

func (r *Relay) ReleaseForTest(ctx context.Context, ids ...uuid.UUID) (int64, error) {
	return r.release(ctx, ids)
}

func (r *Relay) FailForTest(ctx context.Context, id uuid.UUID, msg string) (int, error) {
	got, err := r.recordFailures(ctx, []failure{{c: claimed{Event: Event{ID: id}, attempt: 1}, err: errors.New(msg)}})
	return len(got), err
}

func (c RelayConfig) ValidateForTest() error {
	if err := c.setDefaults(); err != nil {
		return err
	}
	return c.validate()
}

// ClaimInTxForTest runs the relay's claim (both statements) inside the
// caller's transaction, which the test commits or rolls back, so it can hold
// a claim uncommitted.
func (r *Relay) ClaimInTxForTest(ctx context.Context, tx pgx.Tx) ([]Event, error) {
	batch, err := r.claimOn(ctx, tx, false)
	var events []Event
	for _, c := range batch {
		events = append(events, c.Event)
	}
	return events, err
}

// VerifyClaimInTxForTest runs only the claim's verification statement
// (RelayClaimVerify) on ids inside the caller's transaction and returns the
// IDs it gave back.
func (r *Relay) VerifyClaimInTxForTest(ctx context.Context, tx pgx.Tx, ids ...uuid.UUID) ([]uuid.UUID, error) {
	rows, err := tx.Query(ctx, relayQueries.Get("RelayClaimVerify"), r.cfg.Owner, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}

// WithDefaultsForTest returns c with NewRelay's defaults applied.
func (c RelayConfig) WithDefaultsForTest() (RelayConfig, error) {
	err := c.setDefaults()
	return c, err
}
