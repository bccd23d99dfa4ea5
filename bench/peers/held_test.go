package main

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestHeldHorizonRoundReportsTheStall runs the held-horizon round with a 2s
// hold at 20 orders/s for outflow's log source, which reads only below the
// server's horizon and so delivers no order committed during the hold before
// its release, and for River, which does not wait for the horizon: every
// committed order is delivered (the round fails otherwise), both recover
// within seconds of the release, and every figure's line is printed with a
// value.
func TestHeldHorizonRoundReportsTheStall(t *testing.T) {
	const hold, rate = 2 * time.Second, 20
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := newServer(ctx, testdb.AdminURL())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close(context.Background())) })
	for _, c := range []Contender{outflowLog{}, &riverQueue{}} {
		t.Run(c.Name(), func(t *testing.T) {
			b := &bench{srv: srv, res: newResults(), stderr: io.Discard, start: time.Now()}
			b.cfg.heldHorizon, b.cfg.heldRate = hold, rate
			// Round 5 names scratch databases no other test's round does.
			h, err := b.heldRound(ctx, c, 5)
			require.NoError(t, err)
			require.GreaterOrEqual(t, h.committed, int((hold+time.Second).Seconds()*rate*3/4), "orders from the warm-up to recovery")

			var out bytes.Buffer
			b.res.write(&out, []string{c.Name()})
			got := map[string]float64{}
			for line := range strings.SplitSeq(out.String(), "\n") {
				name, v, ok := strings.Cut(line, ": ")
				if suffix, held := strings.CutPrefix(name, c.Name()+"_held_horizon_"); ok && held {
					f, err := strconv.ParseFloat(v, 64)
					require.NoError(t, err, line)
					got[suffix] = f
				}
			}
			t.Logf("%s: %v; %d orders, %d committed and delivered during the hold", c.Name(), got, h.committed, h.heldDelivered)
			require.Len(t, got, 5, "stall_s, p99_ms, dead_tuples, table_bytes, recovery_s")
			require.Positive(t, got["stall_s"])
			require.LessOrEqual(t, got["stall_s"], (hold + 500*time.Millisecond).Seconds(), "the stall is within the hold")
			if c.Name() == (outflowLog{}).Name() {
				require.Zero(t, h.heldDelivered, "the log source reads only below the horizon")
			} else {
				require.Positive(t, h.heldDelivered, "River delivers during the hold")
			}
			require.GreaterOrEqual(t, got["recovery_s"], 0.0)
			require.Less(t, got["recovery_s"], 10.0, "recovered within seconds of the release")
			require.Positive(t, got["p99_ms"])
			require.GreaterOrEqual(t, got["dead_tuples"], 0.0)
			require.Positive(t, got["table_bytes"])
			lat := b.res.samples[c.Name()]["held_horizon"]
			require.GreaterOrEqual(t, len(lat), int(hold.Seconds()*rate*3/4), "about one latency per order from the hold to recovery")
		})
	}
}
