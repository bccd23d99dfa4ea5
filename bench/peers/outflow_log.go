package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
)

// outflowLog is outflow's relay with the log source (outbox.LogRelay,
// OUTFLOW_RELAY_SOURCE=log): the producer's outbox.Enqueuer with
// EnqueueConfig.Log writes each event to the append-only outbox_log in the
// order's round trip, and the relay reads each of the log's partitions in
// key order below the server's horizon (the oldest open transaction's xid),
// advancing one cursor row per partition per batch.
//
// The horizon is the server's: a transaction open anywhere on it holds the
// log's readers back, so on a shared server other sessions' transactions
// add to its handoff latency.
type outflowLog struct{ outflowPoll }

// logEnqueuer writes to the log.
var logEnqueuer = outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true})

func (outflowLog) Name() string { return "outflow_log" }

func (outflowLog) Enqueue(ctx context.Context, tx pgx.Tx, _ Profile, order *pgx.Batch, events []Event) error {
	return enqueueOutflow(ctx, tx, logEnqueuer, order, events)
}

func (outflowLog) Start(ctx context.Context, pool *pgxpool.Pool, sink Sink, _ Profile) (func(context.Context) error, error) {
	relay, err := outbox.NewLogRelay(pool, sinkPublisher(sink), outbox.LogConfig{RelayConfig: outbox.RelayConfig{Logger: quietLogger}})
	if err != nil {
		return nil, err
	}
	// Run gives the partitions' leases back when it returns, so the next
	// phase's relay takes them at once.
	stop := runInBackground(ctx, relay.Run)
	return func(context.Context) error { return stop() }, nil
}

func (outflowLog) Pending(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	return pending(ctx, pool, qOutflowLogPending)
}

func (outflowLog) Settings(Profile) string {
	return fmt.Sprintf("LogConfig{} for both profiles: all %d partitions read by one relay, a window of %d events, "+
		"MaxInFlight %d orders per partition, one cursor advance per batch, LISTEN/NOTIFY wake-ups with a %s safety poll; "+
		"events written by outbox.NewEnqueuer(EnqueueConfig{Log: true})",
		outbox.LogMaxPartitionsDefault, outbox.BatchSizeDefault, outbox.MaxInFlightDefault, outbox.PollIntervalDefault)
}
