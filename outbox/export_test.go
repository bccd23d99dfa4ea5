package outbox

import (
	"context"
	"errors"

	"github.com/google/uuid"
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

func (c Config) ValidateForTest() error {
	if err := c.setDefaults(); err != nil {
		return err
	}
	return c.validate()
}
