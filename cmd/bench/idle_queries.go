package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox"
)

// measureIdleQueries counts what one idle relay with the default Config
// (poll interval, no metrics registry) sends to an idle database, two ways:
// the server's own count of transactions in the relay's scratch database
// (pg_stat_database, read from another database; nothing else is connected
// to it during the window, and every autocommit statement is a transaction),
// and the statements the relay's connections sent, counted by a pgx tracer.
// The verdict takes the server's count, which also sees the pool's liveness
// pings.
func (b *bench) measureIdleQueries(ctx context.Context) error {
	name, dbcfg, err := b.srv.scratch(ctx, "idle")
	if err != nil {
		return err
	}
	defer b.srv.Drop(context.WithoutCancel(ctx), name) //nolint:errcheck // close drops leftovers

	var sent atomic.Int64
	cfg := dbcfg.Copy()
	cfg.ConnConfig.Tracer = countingTracer{n: &sent} // the relay's listener copies it too
	before, err := b.settledTransactions(ctx, name)
	if err != nil {
		return err
	}
	window := b.cfg.idleWindow
	b.progress("idle: one relay with default Config on an empty database for %s", window)
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return err
	}
	relay, err := outbox.NewRelay(pool, outbox.PublisherFunc(noopPublish), outbox.RelayConfig{Logger: b.logger, Source: "poll"})
	if err != nil {
		pool.Close()
		return err
	}
	rctx, stop := context.WithTimeout(ctx, window)
	start := time.Now()
	_ = relay.Run(rctx) // returns when the window ends
	stop()
	elapsed := time.Since(start)
	pool.Close() // a backend flushes its statistics when it exits
	if ctx.Err() != nil {
		return ctx.Err()
	}
	after, err := b.settledTransactions(ctx, name)
	if err != nil {
		return err
	}
	serverRate := float64(after-before) / elapsed.Seconds()
	clientRate := float64(sent.Load()) / elapsed.Seconds()
	b.rep.add(metric{name: "idle_queries_per_s", value: serverRate, decimals: 2, target: atMost(1)})
	b.rep.add(metric{name: "idle_client_statements_per_s", value: clientRate, decimals: 2})
	b.rep.note("idle: one relay, default Config (poll interval %s, Registerer nil), on an empty database for %s, "+
		"start-up and shutdown included. idle_queries_per_s = the server's xact_commit+xact_rollback delta for that "+
		"database (pg_stat_database, read from another database after the relay's connections closed; nothing else "+
		"connected; pgxpool liveness pings count too); idle_client_statements_per_s = statements the relay's pool and "+
		"LISTEN connections sent, counted by a pgx tracer (%d in the window).",
		relay.Config().PollInterval, elapsed.Round(100*time.Millisecond), sent.Load())
	return nil
}

// settledTransactions reads a database's transaction count once the
// server's cumulative statistics have caught up (see settled).
func (b *bench) settledTransactions(ctx context.Context, db string) (int64, error) {
	return settled(ctx, func() (int64, error) {
		n, err := qDatabaseTransactions.Value(ctx, b.srv.Admin, databaseArgs{Database: db})
		if err != nil {
			return 0, fmt.Errorf("read pg_stat_database: %w", err)
		}
		return n, nil
	})
}

// settled reads a cumulative statistic until two readings in a row agree:
// exited backends flush theirs, but the reading may lag by a moment.
func settled(ctx context.Context, read func() (int64, error)) (int64, error) {
	var last int64 = -1
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := read()
		if err != nil {
			return 0, err
		}
		if n == last || time.Now().After(deadline) {
			return n, nil
		}
		last = n
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(700 * time.Millisecond):
		}
	}
}

// countingTracer counts every statement a connection sends.
type countingTracer struct{ n *atomic.Int64 }

func (t countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.n.Add(1)
	return ctx
}

func (countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A batch counts each of its statements.
func (countingTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (t countingTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	t.n.Add(1)
}

func (countingTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
