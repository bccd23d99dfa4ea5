package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
)

// outflowLog is outflow's relay with the log source (RelayConfig.Source "log",
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

// The log source's throughput settings (docs/operations.md, "The log
// source": OUTFLOW_RELAY_BATCH, the read window, and
// OUTFLOW_RELAY_IN_FLIGHT, the publishes at once), the tuned profile's.
const (
	logTunedBatch    = 1000
	logTunedInFlight = 64
)

// logConfig is the log relay's configuration in profile p.
func logConfig(p Profile) outbox.RelayConfig {
	cfg := outbox.RelayConfig{Logger: quietLogger, Source: "log"}
	if p == Tuned {
		cfg.BatchSize, cfg.MaxInFlight = logTunedBatch, logTunedInFlight
	}
	return cfg
}

func (outflowLog) Start(ctx context.Context, pool *pgxpool.Pool, sink Sink, p Profile) (func(context.Context) error, error) {
	relay, err := outbox.NewRelay(pool, sinkPublisher(sink), logConfig(p))
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

// Tables: the log's partitions and its cursors, leases, holds and skips.
func (outflowLog) Tables() []string {
	return []string{"public.outbox\\_log%", "public.outbox_sequences"}
}

func (outflowLog) Settings(p Profile) string {
	cfg := logConfig(p)
	batch, inFlight, how := outbox.BatchSizeDefault, outbox.MaxInFlightDefault, "LogConfig{}"
	if cfg.BatchSize != 0 {
		batch, inFlight = cfg.BatchSize, cfg.MaxInFlight
		how = "RelayConfig{BatchSize, MaxInFlight} (OUTFLOW_RELAY_BATCH, OUTFLOW_RELAY_IN_FLIGHT: its documented throughput settings)"
	}
	return fmt.Sprintf("%s: all 16 partitions read by one relay, a window of %d events, "+
		"MaxInFlight %d publishes at once (one at a time per order), one cursor advance per batch, LISTEN/NOTIFY wake-ups with a %s safety poll; "+
		"events written by outbox.NewEnqueuer(EnqueueConfig{Log: true})",
		how, batch, inFlight, outbox.PollIntervalDefault)
}
