package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/outflow/outflow/internal/bench/benchstat"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
)

// tracing is one way the bench's process traces: off (no provider, what a
// binary does without OTEL_EXPORTER_OTLP_ENDPOINT), or an SDK provider with
// a sampler and a batching exporter that drops the spans it is given, so
// the figure is the cost of making them, not of a receiver.
type tracing struct {
	name string
	tp   trace.TracerProvider
	// sampled is the fraction of requests whose trace is sampled: of the
	// relay's events, those whose recorded traceparent says so.
	sampled float64
	stop    func()
}

func tracings() []tracing {
	sdk := func(name string, fraction float64) tracing {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(fraction))),
			sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		return tracing{name: name, tp: tp, sampled: fraction, stop: func() { _ = tp.Shutdown(context.Background()) }}
	}
	return []tracing{
		{name: "off", tp: noop.NewTracerProvider(), sampled: 1, stop: func() {}},
		sdk("on", 1),
		sdk("sampled", 0.01),
	}
}

// measureTracing compares the outbox with tracing off and on (a sampler of
// 1.0, and of 0.01), in one run: the write (a request's span, the event
// enqueued in it, its trace context recorded with the event) interleaved in
// random order, ratio of medians; and the relay's drain with a no-op
// publisher, each event carrying a trace context, its publish a span.
func (b *bench) measureTracing(ctx context.Context) error {
	ts := tracings()
	defer func() {
		for _, t := range ts {
			t.stop()
		}
	}()
	prop := propagation.TraceContext{}
	pool, done, err := b.srv.scratchPool(ctx, "trace")
	if err != nil {
		return err
	}
	defer done()

	write := func(t tracing) error {
		sctx, span := t.tp.Tracer("outflow-bench").Start(ctx, "POST /orders")
		defer span.End()
		return pgx.BeginFunc(sctx, pool, func(tx pgx.Tx) error {
			e, err := outbox.NewEvent("bench", "trace", "BenchEvent", 1, map[string]any{"amount": 2500})
			if err != nil {
				return err
			}
			e.TraceContext = outbox.CaptureTraceContext(sctx, prop)
			return outbox.EnqueueTx(sctx, tx, e)
		})
	}
	for range 20 { // connections and plan caches
		for _, t := range ts {
			if err := write(t); err != nil {
				return err
			}
		}
	}
	n := b.cfg.writePairs
	b.progress("trace: %d writes with tracing off, on and sampled at 1%%, interleaved in random order", n)
	times := make([][]time.Duration, len(ts))
	for range n {
		for _, i := range rand.Perm(len(ts)) {
			start := time.Now()
			if err := write(ts[i]); err != nil {
				return err
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	off := benchstat.Median(times[0])
	b.rep.add(metric{name: "trace_write_off_median_ms", value: benchstat.Ms(off), decimals: 2})
	b.rep.add(metric{name: "trace_write_on_ratio", value: benchstat.Ratio(float64(benchstat.Median(times[1])), float64(off)), decimals: 2})
	b.rep.add(metric{name: "trace_write_sampled_ratio", value: benchstat.Ratio(float64(benchstat.Median(times[2])), float64(off)), decimals: 2})

	// The relay: the same backlog, each event with a trace context, drained
	// once per way of tracing, in an order that rotates each round.
	events := b.cfg.noopEvents
	elapsed := make([][]time.Duration, len(ts))
	for round := range b.cfg.noopRounds {
		for k := range ts {
			i := (k + round) % len(ts)
			if _, err := qTruncateOutbox.Exec(ctx, pool, namedsql.NoArgs{}); err != nil {
				return err
			}
			if _, err := qSeedPending.Exec(ctx, pool, seedArgs{Events: events, Aggregates: events / b.cfg.noopPerAggregate}); err != nil {
				return fmt.Errorf("seed %d events: %w", events, err)
			}
			if _, err := qSeedTraceContexts.Exec(ctx, pool, seedTraceArgs{Sampled: ts[i].sampled}); err != nil {
				return err
			}
			if _, err := qAnalyzeOutbox.Exec(ctx, pool, namedsql.NoArgs{}); err != nil {
				return err
			}
			b.progress("trace round %d: relay with tracing %s, no-op publisher, %d events", round+1, ts[i].name, events)
			res, err := drainWith(ctx, pool, outbox.PublisherFunc(noopPublish), events,
				outbox.RelayConfig{Logger: b.logger, TracerProvider: ts[i].tp, Propagator: prop})
			if err != nil {
				return err
			}
			elapsed[i] = append(elapsed[i], res.elapsed)
			b.progress("  %.0f events/s", perSecond(events, res.elapsed))
		}
	}
	rate := func(i int) float64 { return perSecond(events, benchstat.Median(elapsed[i])) }
	b.rep.add(metric{name: "trace_relay_off_events_per_s", value: rate(0)})
	b.rep.add(metric{name: "trace_relay_on_ratio", value: benchstat.Ratio(rate(1), rate(0)), decimals: 2})
	b.rep.add(metric{name: "trace_relay_sampled_ratio", value: benchstat.Ratio(rate(2), rate(0)), decimals: 2})
	b.rep.note("trace: tracing off (a no-op provider: a binary without OTEL_EXPORTER_OTLP_ENDPOINT), on (an SDK provider, "+
		"parent-based always-on sampler, a batching exporter that drops the spans) and sampled (the same at 1%%). Write: %d "+
		"of each, interleaved in random order, a request's span around a transaction that enqueues one event with its "+
		"trace context; ratios of medians to off. Relay: %d events each carrying a traceparent (sampled: 1%% of them "+
		"flagged sampled, the relay's sampler following its parent), drained by a "+
		"default relay with a no-op publisher, %d rounds rotating the order; ratios of events/s (median drain time) to off.",
		n, events, b.cfg.noopRounds)
	return nil
}
