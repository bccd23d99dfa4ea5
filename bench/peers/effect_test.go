package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestEffectRoundTimesTheFirstStep runs the effect round for outflow (the
// poll source, through a Temporal workflow's first activity on the bench's
// dev server) and for DBOS (its own workflow's step): every event's effect
// runs its first step, once per event in the figures, and the round
// reports the drain's rate and one latency per timed order.
func TestEffectRoundTimesTheFirstStep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	tmp, err := startTemporal(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tmp.stop()) })
	effects, err := tmp.startEffects()
	require.NoError(t, err)
	t.Cleanup(effects.w.Stop)

	srv, err := newServer(ctx, testdb.AdminURL())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close(context.Background())) })
	for _, c := range []Contender{outflowPoll{}, &dbosQueue{}} {
		t.Run(c.Name(), func(t *testing.T) {
			b := &bench{srv: srv, res: newResults(), stderr: io.Discard, start: time.Now(), temporal: tmp, effects: effects}
			b.cfg.events, b.cfg.orders = 100, 10
			b.cfg.temporalEvents, b.cfg.temporalRate, b.cfg.temporalDuration = 60, 20, time.Second
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
		})
	}
}
