package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestCrashRoundLosesNothingForOutflow runs the crash round at a small
// scale: PostgreSQL (a throwaway cluster each) restarted in the middle of
// a drain by each of outflow's sources, and the poll source's consumer
// process killed in the middle of one and started again. Something was
// delivered after each crash (so it came mid-drain), outflow lost no event
// and delivered none for the first time after a later one of its order,
// and the four figures are printed under their names.
func TestCrashRoundLosesNothingForOutflow(t *testing.T) {
	t.Parallel()
	// The log's relay reads a window of logTunedBatch events in each of
	// its 16 partitions before it publishes them, and a window read is
	// delivered from memory while PostgreSQL restarts: a backlog of
	// 10,000 (625 a partition) was read whole before the restart, and
	// whether anything came after it was a race. Three windows a
	// partition leave two unread when a quarter was delivered.
	const events, logEvents = 10000, 3 * 16 * logTunedBatch
	cases := []struct {
		kind   string
		c      Contender
		events int
	}{
		{"restart", outflowPoll{}, events},
		{"restart", outflowCDC{}, events},
		{"restart", outflowLog{}, logEvents},
		{"kill", outflowPoll{}, events},
	}
	// The rounds run at once: most of their time is the poll source's
	// 30 s lease on the events whose marks the crash cut off.
	type outcome struct {
		b   *bench
		res crashResult
		err error
	}
	outcomes := make([]outcome, len(cases))
	var wg sync.WaitGroup
	for i, tc := range cases {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			o := &outcomes[i]
			srv, err := newServer(ctx, testdb.AdminURL())
			if err != nil {
				o.err = err
				return
			}
			t.Cleanup(func() { require.NoError(t, srv.Close(context.Background())) })
			o.b = &bench{srv: srv, res: newResults(), stderr: testWriter{t}, start: time.Now()}
			o.b.cfg.crashEvents = tc.events
			// Round 11 names scratch databases no other test's round does.
			if tc.kind == "kill" {
				o.res, o.err = o.b.killRound(ctx, tc.c, 11, uint64(i+1))
				return
			}
			if o.b.crash, o.err = startCrashCluster(ctx); o.err != nil {
				return
			}
			t.Cleanup(func() { o.b.crash.close(func(err error) { t.Error(err) }) })
			o.res, o.err = o.b.restartRound(ctx, tc.c, 11, uint64(i+1))
		})
	}
	wg.Wait()
	for i, tc := range cases {
		t.Run(tc.kind+"/"+tc.c.Name(), func(t *testing.T) {
			o := outcomes[i]
			require.NoError(t, o.err)
			require.True(t, o.res.ok, "nothing delivered after the %s: it came after the drain", tc.kind)

			var out bytes.Buffer
			o.b.res.write(&out, []string{tc.c.Name()})
			got := map[string]float64{}
			for line := range strings.SplitSeq(out.String(), "\n") {
				name, v, ok := strings.Cut(line, ": ")
				if suffix, crash := strings.CutPrefix(name, tc.c.Name()+"_"+tc.kind+"_"); ok && crash {
					f, err := strconv.ParseFloat(v, 64)
					require.NoError(t, err, line)
					got[suffix] = f
				}
			}
			t.Logf("%s_%s: %v", tc.c.Name(), tc.kind, got)
			require.Len(t, got, 4, "first_delivery_s, lost, duplicates, out_of_order")
			require.Zero(t, got["lost"], "outflow lost events")
			require.Zero(t, got["out_of_order"], "outflow delivered an event after a later one of its order")
			require.GreaterOrEqual(t, got["first_delivery_s"], 0.0)
			require.GreaterOrEqual(t, got["duplicates"], 0.0)
		})
	}
}

// testWriter sends a round's progress to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
