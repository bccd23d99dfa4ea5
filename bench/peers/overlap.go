package main

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/namedsql"
)

// overlap is the overlapping-transactions round: for each of orders new
// orders, two transactions on the order where the later sequence is written
// by the transaction holding the earlier xid. Transaction A begins and
// takes its xid first (pg_current_xact_id()); B begins after, enqueues the
// order's sequence 1 and commits; then A enqueues sequence 2 and commits.
// The contender runs with the tuned settings while the pairs are written,
// one order after another, and the recorder counts the deliveries that
// reach it out of their order's sequence (next is the sink behind it, nil:
// a no-op sink). A reader that orders by
// transaction id delivers each order's events [2 1].
//
// Each pair checks that B's xid is above A's, so the round measures what it
// says it measures.
func (b *bench) overlap(ctx context.Context, c Contender, cfg *pgxpool.Config, orders int, next Sink) (tally, error) {
	consumer, err := openPool(ctx, cfg, nil)
	if err != nil {
		return tally{}, err
	}
	defer consumer.Close()
	producer, err := openPool(ctx, cfg, nil)
	if err != nil {
		return tally{}, err
	}
	defer producer.Close()

	rec := newRecorder(next, 2*orders)
	stop, err := c.Start(ctx, consumer, rec, Tuned)
	if err != nil {
		return tally{}, err
	}
	for range orders {
		if err := overlapPair(ctx, c, producer); err != nil {
			_ = stop(context.WithoutCancel(ctx))
			return rec.tally(), err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	waitErr := rec.wait(wctx)
	cancel()
	if waitErr == nil {
		waitErr = settle(ctx, c, cfg)
	}
	stopErr := stop(context.WithoutCancel(ctx))
	t := rec.tally()
	if waitErr != nil {
		return t, fmt.Errorf("%s delivered %d of %d events: %w", c.Name(), t.distinct, 2*orders, waitErr)
	}
	if stopErr != nil {
		return t, fmt.Errorf("stop %s: %w", c.Name(), stopErr)
	}
	return t, nil
}

// overlapPair writes one order's two overlapping transactions through c.
func overlapPair(ctx context.Context, c Contender, pool *pgxpool.Pool) error {
	order, err := uuid.NewV7()
	if err != nil {
		return err
	}
	payload, err := orderCreatedPayload(order.String())
	if err != nil {
		return err
	}
	var events [2]Event
	for i := range events {
		id, err := uuid.NewV7()
		if err != nil {
			return err
		}
		events[i] = Event{ID: id, OrderID: order.String(), Seq: int64(i + 1), Payload: payload}
	}

	a, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer a.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it does nothing
	xidA, err := qTransactionID.Value(ctx, a, namedsql.NoArgs{})
	if err != nil {
		return err
	}
	if err := pgx.BeginFunc(ctx, pool, func(b pgx.Tx) error {
		if err := c.Enqueue(ctx, b, Tuned, &pgx.Batch{}, events[:1]); err != nil {
			return err
		}
		xidB, err := qTransactionID.Value(ctx, b, namedsql.NoArgs{})
		if err != nil {
			return err
		}
		if xidB <= xidA {
			return fmt.Errorf("overlap: the later transaction's xid %d is not above the earlier's %d", xidB, xidA)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("overlap, sequence 1: %w", err)
	}
	if err := c.Enqueue(ctx, a, Tuned, &pgx.Batch{}, events[1:]); err != nil {
		return fmt.Errorf("overlap, sequence 2: %w", err)
	}
	return a.Commit(ctx)
}
