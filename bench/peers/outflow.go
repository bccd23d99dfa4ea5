package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
)

// outflowPoll is outflow's own relay (package outbox): outbox.EnqueueBatch in
// the order's round trip, a Relay with a Publisher that calls the sink.
type outflowPoll struct{}

func (outflowPoll) Name() string { return "outflow" }

// Install has nothing to do: outflow's schema is already there.
func (outflowPoll) Install(context.Context, *pgxpool.Pool) error { return nil }

func (outflowPoll) Enqueue(ctx context.Context, tx pgx.Tx, _ Profile, order *pgx.Batch, events []Event) error {
	return enqueueOutflow(ctx, tx, eventsEnqueuer, order, events)
}

// eventsEnqueuer writes to outbox_events, as outbox.EnqueueBatch does (the
// poll and cdc sources'); outflowLog's writes to the log.
var eventsEnqueuer = outbox.NewEnqueuer(outbox.EnqueueConfig{})

// enqueueOutflow enqueues events with q in order's round trip, and checks
// that outflow gave each the bench's sequence.
func enqueueOutflow(ctx context.Context, tx pgx.Tx, q *outbox.Enqueuer, order *pgx.Batch, events []Event) error {
	evs := make([]outbox.Event, len(events))
	for i, e := range events {
		evs[i] = outbox.Event{
			ID: e.ID, AggregateType: orders.AggregateType, AggregateID: e.OrderID,
			Type: orders.EventOrderCreated, SchemaVersion: orders.OrderCreatedV1, Payload: e.Payload,
		}
	}
	queued, err := q.EnqueueBatch(order, evs...)
	if err != nil {
		return err
	}
	if err := tx.SendBatch(ctx, order).Close(); err != nil {
		return err
	}
	out, err := queued.Events()
	if err != nil {
		return err
	}
	// outflow assigns the sequence itself; the bench's must agree with it.
	for i, e := range out {
		if e.Sequence != events[i].Seq {
			return fmt.Errorf("outflow gave event %d of order %s sequence %d", events[i].Seq, e.AggregateID, e.Sequence)
		}
	}
	return nil
}

func (outflowPoll) Start(ctx context.Context, pool *pgxpool.Pool, sink Sink, _ Profile) (func(context.Context) error, error) {
	relay, err := outbox.NewRelay(pool, sinkPublisher(sink), outbox.RelayConfig{Logger: quietLogger, Source: "poll"})
	if err != nil {
		return nil, err
	}
	stop := runInBackground(ctx, relay.Run)
	return func(context.Context) error {
		stop() // Run's error once stopped is not the run's: it was cancelled
		return nil
	}, nil
}

// sinkPublisher is an outflow publisher that delivers each event to sink.
func sinkPublisher(sink Sink) outbox.Publisher {
	return outbox.PublisherFunc(func(ctx context.Context, e outbox.Event) error {
		return sink.Deliver(ctx, Event{ID: e.ID, OrderID: e.AggregateID, Seq: e.Sequence, Payload: e.Payload})
	})
}

// runInBackground runs run until the returned stop cancels it; stop waits
// for run to return and returns its error.
func runInBackground(ctx context.Context, run func(context.Context) error) (stop func() error) {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(rctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

// Settings: outflow's defaults are its throughput settings, so both profiles
// are the zero RelayConfig.
func (outflowPoll) Pending(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	return pending(ctx, pool, qOutflowPending)
}

func (outflowPoll) Tables() []string {
	return []string{"public.outbox_events", "public.outbox_sequences"}
}

func (outflowPoll) Settings(Profile) string {
	return fmt.Sprintf("RelayConfig{} for both profiles: batch %d, MaxInFlight %d, marks of %d or after %s, "+
		"LISTEN/NOTIFY wake-ups with a %s safety poll",
		outbox.BatchSizeDefault, outbox.MaxInFlightDefault, outbox.MarkBatchSizeDefault,
		outbox.MarkDelayDefault, outbox.PollIntervalDefault)
}
