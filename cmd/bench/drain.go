package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
)

// drainTimeout bounds one relay run; far above any healthy run.
const drainTimeout = 10 * time.Minute

// drainResult is one relay run over a pre-enqueued backlog.
type drainResult struct {
	elapsed time.Duration
	// publishErrors counts failed Publish calls (retried by the relay).
	publishErrors int64
	// maxInFlight is the relay's effective concurrency.
	maxInFlight int
}

// drain runs a relay with default configuration that publishes through pub,
// from the moment Run is called until n events are acknowledged and none is
// left unpublished (marks trail acknowledgements by Config.MarkDelay).
func drain(ctx context.Context, pool *pgxpool.Pool, pub outbox.Publisher, n int, logger *slog.Logger) (drainResult, error) {
	return drainWith(ctx, pool, pub, n, outbox.RelayConfig{Logger: logger})
}

// drainWith is [drain] with a relay configured by cfg.
func drainWith(ctx context.Context, pool *pgxpool.Pool, pub outbox.Publisher, n int, cfg outbox.RelayConfig) (drainResult, error) {
	var (
		acked, failed atomic.Int64
		done          = make(chan struct{})
	)
	counted := outbox.PublisherFunc(func(ctx context.Context, e outbox.Event) error {
		if err := pub.Publish(ctx, e); err != nil {
			failed.Add(1)
			return err
		}
		if acked.Add(1) == int64(n) {
			close(done)
		}
		return nil
	})
	relay, err := outbox.NewRelay(pool, counted, cfg)
	if err != nil {
		return drainResult{}, err
	}
	res := drainResult{maxInFlight: relay.Config().MaxInFlight}

	rctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(stopped)
		_ = relay.Run(rctx)
	}()
	defer func() {
		stop()
		<-stopped
	}()

	timeout := time.NewTimer(drainTimeout)
	defer timeout.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		return res, ctx.Err()
	case <-timeout.C:
		return res, fmt.Errorf("relay acknowledged %d of %d events in %s (%d publish errors)", acked.Load(), n, drainTimeout, failed.Load())
	}
	for {
		pending, err := countPending(ctx, pool)
		if err != nil {
			return res, err
		}
		if pending == 0 {
			break
		}
		if time.Since(start) > drainTimeout {
			return res, fmt.Errorf("%d events acknowledged but still unpublished after %s", pending, drainTimeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
	res.elapsed = time.Since(start)
	res.publishErrors = failed.Load()
	return res, nil
}

func countPending(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	return qCountPending.Value(ctx, pool, namedsql.NoArgs{})
}
