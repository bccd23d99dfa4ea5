package testsuite

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox"
)

// PoisonAggregateType is the aggregate type of the poison events the chaos
// soak enqueues: no order has it, so invariant 2 and the order checks never
// see them, and the soak's operator may skip exactly these.
const PoisonAggregateType = "soak_poison"

// EnqueuePoison commits one poison aggregate of n events (1 or more), each
// of which a relay quarantines at its first attempt, as a bad deploy's
// events would be: even ones have a type with no route ("ParcelTeleported"),
// odd ones an OrderCreated payload that fails validation. Only the first is
// claimable; the next waits behind it until an operator skips it. It rides
// out lost connections (a commit whose answer was lost may have written the
// aggregate; the operator finds poison events by their aggregate type).
// On a log stack (Source "log") they go to the log, as the stack's
// producers' do: there the first one's failure makes its aggregate's hold,
// quarantined, and the hold owns the next.
func EnqueuePoison(ctx context.Context, s *Stack, n int) error {
	agg := uuid.NewString()
	events, err := poisonEvents(agg, n)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
			if exists, err := qPoisonExists.Value(ctx, tx, aggregateArgs{AggregateType: PoisonAggregateType, AggregateID: agg}); err != nil || exists {
				return err
			}
			return enqueuePoisonTx(ctx, tx, s, events)
		})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("enqueue poison aggregate %s: %w", agg, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// poisonEvents are the n events of the poison aggregate agg.
func poisonEvents(agg string, n int) ([]outbox.Event, error) {
	var events []outbox.Event
	for i := range n {
		var e outbox.Event
		var err error
		if i%2 == 0 {
			e, err = outbox.NewEvent(PoisonAggregateType, agg, "ParcelTeleported", 1, map[string]string{"parcel": agg})
		} else {
			e, err = outbox.NewEvent(PoisonAggregateType, agg, "OrderCreated", 1, map[string]string{"order_id": agg})
		}
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return events, nil
}

// enqueuePoisonTx enqueues poison events in tx, to the log on a log stack.
func enqueuePoisonTx(ctx context.Context, tx pgx.Tx, s *Stack, events []outbox.Event) error {
	_, err := outbox.NewEnqueuer(outbox.EnqueueConfig{Log: s.Source == "log"}).Enqueue(ctx, tx, events...)
	return err
}
