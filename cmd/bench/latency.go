package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/internal/bench/benchdb"
	"github.com/outflow/outflow/internal/bench/benchstat"
	"github.com/outflow/outflow/internal/routes"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// measureLatency measures commit → Temporal accept through the relay, with
// orders trickled at a steady rate while the relay sits on a long poll
// interval, so every handoff is woken by LISTEN/NOTIFY; and, beside it, one
// bare ExecuteWorkflow round trip, the floor of any handoff.
func (b *bench) measureLatency(ctx context.Context) error {
	bare, err := b.bareLatencies(ctx)
	if err != nil {
		return err
	}

	name, dbcfg, err := b.srv.scratch(ctx, "latency")
	if err != nil {
		return err
	}
	defer b.srv.Drop(context.WithoutCancel(ctx), name) //nolint:errcheck // close drops leftovers
	// A poll interval far beyond the run: only NOTIFY wakes the relay.
	const poll = 10 * time.Minute
	handoff, total, warm, err := b.trickleHandoffs(ctx, dbcfg, nil, func(ctx context.Context, pool *pgxpool.Pool, pub outbox.Publisher) (func(), error) {
		relay, err := outbox.NewRelay(pool, pub, outbox.RelayConfig{PollInterval: poll, Logger: b.logger, Source: "poll"})
		if err != nil {
			return nil, err
		}
		return runInBackground(ctx, relay.Run), nil
	})
	if err != nil {
		return err
	}
	rate := b.cfg.latencyRate

	b.rep.add(metric{name: "handoff_latency_p50_ms", value: benchstat.Ms(benchstat.Percentile(handoff, 50)), decimals: 1})
	b.rep.add(metric{name: "handoff_latency_p99_ms", value: benchstat.Ms(benchstat.Percentile(handoff, 99)), decimals: 1})
	b.rep.add(metric{name: "bare_start_latency_p50_ms", value: benchstat.Ms(benchstat.Percentile(bare, 50)), decimals: 1})
	b.rep.add(metric{name: "bare_start_latency_p99_ms", value: benchstat.Ms(benchstat.Percentile(bare, 99)), decimals: 1})
	b.rep.note("handoff latency: %d orders at %d/s (after %d warm-up), each from the return of its COMMIT to the return "+
		"of the publisher's ExecuteWorkflow, matched by event id; relay poll interval %s, so every handoff is woken by "+
		"LISTEN/NOTIFY. bare start latency: %d sequential ExecuteWorkflow round trips on an idle client.",
		total-warm, rate, warm, poll, len(bare))
	return nil
}

// bareLatencies times bareLatencyStarts sequential ExecuteWorkflow round
// trips, after ten that warm the connection.
func (b *bench) bareLatencies(ctx context.Context) ([]time.Duration, error) {
	b.progress("latency: %d sequential bare ExecuteWorkflow round trips", b.cfg.bareLatencyStarts)
	bare := make([]time.Duration, 0, b.cfg.bareLatencyStarts)
	for i := range b.cfg.bareLatencyStarts + 10 {
		start := time.Now()
		if err := b.startOne(ctx); err != nil {
			return nil, err
		}
		if i >= 10 {
			bare = append(bare, time.Since(start))
		}
	}
	return bare, nil
}

// runInBackground runs run until the returned stop is called, which waits
// for it to return.
func runInBackground(ctx context.Context, run func(context.Context) error) (stop func()) {
	rctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = run(rctx)
	}()
	return func() {
		cancel()
		<-stopped
	}
}

// trickleHandoffs places orders at latencyRate for latencyDuration (after one
// second of warm-up) in a scratch database while the relay that start runs
// publishes them to Temporal, and returns each order's handoff after the
// warm-up: from the return of its COMMIT to the return of the publisher's
// ExecuteWorkflow, matched by event id.
func (b *bench) trickleHandoffs(ctx context.Context, dbcfg *pgxpool.Config, enq *outbox.Enqueuer,
	start func(context.Context, *pgxpool.Pool, outbox.Publisher) (stop func(), err error),
) (handoff []time.Duration, total, warm int, err error) {
	relayPool, err := openPool(ctx, dbcfg)
	if err != nil {
		return nil, 0, 0, err
	}
	defer relayPool.Close()
	producerPool, err := openPool(ctx, dbcfg)
	if err != nil {
		return nil, 0, 0, err
	}
	defer producerPool.Close()

	var (
		mu        sync.Mutex
		acks      = map[uuid.UUID]time.Time{}
		ackSignal = make(chan struct{}, 1)
	)
	tp, err := temporalpub.New(b.tc, client.Options{Namespace: b.namespace}, temporalpub.Config{TaskQueue: b.taskQueue, Routes: routes.Orders()})
	if err != nil {
		return nil, 0, 0, err
	}
	pub := outbox.PublisherFunc(func(ctx context.Context, e outbox.Event) error {
		if err := tp.Publish(ctx, e); err != nil {
			return err
		}
		at := time.Now() // Temporal has accepted the start
		mu.Lock()
		acks[e.ID] = at
		mu.Unlock()
		select {
		case ackSignal <- struct{}{}:
		default:
		}
		return nil
	})
	stop, err := start(ctx, relayPool, pub)
	if err != nil {
		return nil, 0, 0, err
	}
	defer stop()

	rate := b.cfg.latencyRate
	warm = rate // one second of warm-up: the listener connects, plans are cached
	total = warm + int(b.cfg.latencyDuration.Seconds()*float64(rate))
	b.progress("latency: %d orders at %d/s through the relay; the first %d are warm-up", total, rate, warm)
	commits := make([]struct {
		event uuid.UUID
		at    time.Time
	}, total)
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	p := benchdb.Order()
	for i := range total {
		select {
		case <-ctx.Done():
			tick.Stop()
			wg.Wait()
			return nil, 0, 0, ctx.Err()
		case <-tick.C:
		}
		wg.Go(func() {
			res, err := orders.CreateOrder(ctx, producerPool, p, orders.WithEnqueuer(enq))
			at := time.Now() // COMMIT has returned
			if err != nil {
				errMu.Lock()
				firstErr = fmt.Errorf("place order: %w", err)
				errMu.Unlock()
				return
			}
			commits[i].event, commits[i].at = res.EventID, at
		})
	}
	tick.Stop()
	wg.Wait()
	if firstErr != nil {
		return nil, 0, 0, firstErr
	}

	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		mu.Lock()
		n := len(acks)
		mu.Unlock()
		if n >= total {
			break
		}
		select {
		case <-ackSignal:
		case <-ctx.Done():
			return nil, 0, 0, ctx.Err()
		case <-deadline.C:
			return nil, 0, 0, fmt.Errorf("only %d of %d events reached Temporal within a minute of the last commit", n, total)
		}
	}
	handoff = make([]time.Duration, 0, total-warm)
	mu.Lock()
	for _, c := range commits[warm:] {
		handoff = append(handoff, acks[c.event].Sub(c.at))
	}
	mu.Unlock()
	return handoff, total, warm, nil
}
