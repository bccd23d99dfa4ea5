package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/bench/benchcpu"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestEffectRoundTimesTheFirstStep runs the effect round for outflow (the
// poll source, through a Temporal workflow's first activity on the bench's
// dev server) and for DBOS (its own workflow's step): every event's effect
// runs its first step, once per event in the figures, and the round
// reports the drain's rate and one latency per timed order.
func TestEffectRoundTimesTheFirstStep(t *testing.T) {
	ctx, tmp, effects, srv := effectSetup(t)
	for _, c := range []Contender{outflowPoll{}, &dbosQueue{}} {
		t.Run(c.Name(), func(t *testing.T) {
			b := &bench{srv: srv, res: newResults(), stderr: io.Discard, start: time.Now(), temporal: tmp, effects: effects}
			b.cfg.events, b.cfg.orders = 100, 10
			b.cfg.temporalEvents, b.cfg.temporalRate, b.cfg.effectRate, b.cfg.temporalDuration = 60, 20, 20, time.Second
			name, cfg, err := srv.scratch(ctx, c, 0)
			require.NoError(t, err)
			defer srv.Drop(context.Background(), name) //nolint:errcheck // close drops leftovers

			require.NoError(t, b.effectRound(ctx, c, cfg, 1))
			rates := b.res.values[c.Name()]["effect_started_per_s"]
			require.Len(t, rates, 1)
			require.Greater(t, rates[0], 0.0)
			lat := b.res.samples[c.Name()]["effect_started"]
			require.Len(t, lat, 20, "one latency per timed order (20/s for 1s after the warm-up)")
			for _, d := range lat {
				require.Positive(t, d, "an effect starts after its order's commit")
			}
			cpu := b.res.values[c.Name()]
			require.Positive(t, cpu["effect_cpu_consumer_cores"][0], "the bench process ran the consumer")
			if c.Name() != (&dbosQueue{}).Name() {
				require.Positive(t, cpu["effect_cpu_temporal_cores"][0], "the dev server started the workflows")
			}
			// A drain this small may cost PostgreSQL less than one clock tick.
			require.GreaterOrEqual(t, cpu["effect_cpu_postgres_cores"][0], 0.0)
			total, err := benchcpu.Meter{}.Sample()
			require.NoError(t, err)
			require.Positive(t, total.Postgres, "PostgreSQL's processes are found and read")
		})
	}
}

// TestBareRoundIsTheBaseline runs the effect round's baseline: each order
// committed, then its workflow started by the committing goroutine. It
// reports a rate, one latency per timed order, and the contenders' p99 is
// set against its.
func TestBareRoundIsTheBaseline(t *testing.T) {
	ctx, tmp, effects, srv := effectSetup(t)
	require.NotZero(t, tmp.pid, "the dev server's process is found for the CPU split")

	b := &bench{srv: srv, res: newResults(), stderr: io.Discard, start: time.Now(), temporal: tmp, effects: effects}
	b.cfg.temporalEvents, b.cfg.effectRate, b.cfg.temporalDuration = 60, 20, time.Second
	require.NoError(t, b.bareRound(ctx, 0))
	require.Positive(t, b.res.values[bareStart]["effect_started_per_s"][0])
	require.Positive(t, b.res.values[bareStart]["effect_cpu_temporal_cores"][0])
	lat := b.res.samples[bareStart]["effect_started"]
	require.Len(t, lat, 20, "one latency per timed order (20/s for 1s after the warm-up)")
	for _, d := range lat {
		require.Positive(t, d)
	}
	// A contender twice as slow at every order has a ratio of 2.
	for _, d := range lat {
		b.res.addSamples("slow", "effect_started", []time.Duration{2 * d})
	}
	ratio := b.res.value("slow", figure{combine: p99VsBare, samples: "effect_started"})
	require.InDelta(t, 2.0, ratio, 1e-9)
}

// effectSetup starts what the effect round needs, for t: a dev server, the
// effect's worker on it, and the scratch databases' server; all stop when t
// ends, and ctx with it (at most four minutes).
func effectSetup(t *testing.T) (context.Context, *temporal, *effectWorker, *server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	tmp, err := startTemporal(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tmp.stop()) })
	effects, err := tmp.startEffects()
	require.NoError(t, err)
	t.Cleanup(effects.w.Stop)
	srv, err := newServer(ctx, testdb.AdminURL())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close(context.Background())) })
	return ctx, tmp, effects, srv
}
