package testsuite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/natspub/dev/natsserver"
)

// TestChaosSoakJetStream runs the stack with both sinks
// (OUTFLOW_SINKS=temporal,jetstream), two relays and the stream's consumer
// cmd/orderfeed, on a NATS server of the test's own, while orders (with
// declines and cancels) arrive at about four a second. Every few seconds a
// relay or the consumer is SIGKILLed and restarted, and the NATS server is
// restarted once mid-run (its store kept). Then it drains and asserts the
// four invariants and, at the consumer's table, that every event was
// applied exactly once and in its order's sequence, none lost.
//
// Meanwhile an [Operator] enqueues poison aggregates every four seconds
// and skips them once quarantined: unroutable and invalid events, and
// events of JetStreamOversizedBytes, which Temporal takes and the stream
// refuses for their size (the relay quarantines them at once, as the
// event's fault), some with a deliverable event behind. At the end it
// replays every skipped aggregate, and [CheckStreamSkips] asserts that no
// skipped event is on the stream but as its tombstone, while the events
// behind them were delivered, also again by the replays.
//
// Load: OUTFLOW_SOAK_DURATION, default 40s.
func TestChaosSoakJetStream(t *testing.T) {
	dur := cdcSoakDuration(t)
	ctx, cancel := context.WithTimeout(context.Background(), dur+10*time.Minute)
	defer cancel()
	ns, err := natsserver.Start(ctx, t.TempDir())
	require.NoError(t, err, "the soak restarts a NATS server of its own")
	t.Cleanup(ns.Stop)
	s := NewStack(t)
	stream := s.UseJetStream(ns.URL())
	for _, name := range []string{"orderapi", "starter", "starter-2", "worker", "orderfeed"} {
		s.Start(name, "")
	}

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 28))
	op := NewOperator(s, 0, seed)
	op.OversizedBytes = JetStreamOversizedBytes
	t.Cleanup(func() {
		if t.Failed() {
			j := op.Journal()
			t.Logf("operator journal of the failed soak:\n%s\n%s", j.Report(), j.Details())
		}
	})
	var mu sync.Mutex
	var loadErrs []error
	record := func(err error) {
		if err != nil {
			mu.Lock()
			loadErrs = append(loadErrs, err)
			mu.Unlock()
		}
	}
	var placed, cancels, kills, natsRestarts atomic.Int64
	loadCtx, stopLoad := context.WithTimeout(ctx, dur)
	defer stopLoad()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-loadCtx.Done():
				return
			case <-tick.C:
			}
			if n%16 == 0 {
				// A bad deploy's poison aggregate, every four seconds.
				wg.Add(1)
				go func() {
					defer wg.Done()
					record(op.Poison(ctx))
				}()
			}
			mu.Lock()
			roll := rng.IntN(100)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				pm := "pm_card_visa"
				if roll < 15 {
					pm = "pm_card_chargeDeclined"
				}
				o, err := s.API().Create(ctx, "soak-js-"+uuid.NewString(), pm)
				if err != nil {
					record(err)
					return
				}
				placed.Add(1)
				if roll >= 15 && roll < 35 {
					cancels.Add(1)
					record(s.API().Cancel(ctx, o.OrderID))
				}
			}()
		}
	}()
	// The operator skips a quarantined poison event every one to two and a
	// half seconds.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; ; n++ {
			mu.Lock()
			pause := time.Duration(1000+rng.IntN(1500)) * time.Millisecond
			mu.Unlock()
			select {
			case <-loadCtx.Done():
				return
			case <-time.After(pause):
			}
			op.skip(loadCtx, n)
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		victims := []string{"starter", "starter-2", "orderfeed"}
		for {
			mu.Lock()
			pause := time.Duration(2000+rng.IntN(2000)) * time.Millisecond
			name := victims[rng.IntN(len(victims))]
			mu.Unlock()
			select {
			case <-loadCtx.Done():
				return
			case <-time.After(pause):
			}
			if natsRestarts.Load() == 0 && time.Since(start) > dur/2 {
				ns.Stop()
				natsRestarts.Add(1)
				time.Sleep(3 * time.Second) // down long enough for every client to notice
				record(ns.Start(ctx))
				continue
			}
			if k := kills.Load(); k < 2 {
				name = victims[2*int(k)] // a relay and the consumer die for certain
			}
			s.Proc(name).Kill()
			kills.Add(1)
			s.Start(name, "")
		}
	}()
	wg.Wait()
	mu.Lock()
	require.Empty(t, loadErrs, "every request must eventually succeed")
	mu.Unlock()
	require.Equal(t, int64(1), natsRestarts.Load(), "the NATS server was restarted")
	// The operator's last duty: skip the poison left, then replay every
	// skipped aggregate.
	require.NoError(t, op.Finish(ctx, 3*time.Minute), "the operator's finish")

	assertRecovered(ctx, t, s)
	orders, err := WaitFeed(ctx, s.Pool, 2*time.Minute)
	require.NoError(t, err, "the invariants at the stream's consumer")

	facts, err := qFeedFacts.All(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
	var events int64
	for _, f := range facts {
		events += f.Events
	}
	nc, err := nats.Connect(ns.URL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	info, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	msgs := info.CachedInfo().State.Msgs
	require.GreaterOrEqual(t, msgs, uint64(events), "every event is in the stream")
	skips, err := CheckStreamSkips(ctx, s, ns.URL(), stream, op.Journal())
	require.NoError(t, err, "the poison aggregates at the stream")
	logs := s.LogCounts("duplicate publish absorbed", "gap in aggregate sequence", "NATS connection lost", "acknowledgement dropped")
	report := fmt.Sprintf(`jetstream chaos soak report (%s of load, seed %d)
  orders placed:       %d (cancels %d), %d at the consumer
  events:              %d; stream messages %d (%d stored twice: redeliveries outside the duplicate window)
  faults:              %d relay/consumer SIGKILLs, NATS server restarted %d time(s)
  relay logs:          %d duplicate publishes absorbed by the stream, %d NATS connections lost
  consumer logs:       %d gaps waited out (gap in aggregate sequence)
%s
  %s
  lost events: 0, events applied twice: 0, out of order: 0 (checked at order_feed and its inbox)`,
		dur, seed, placed.Load(), cancels.Load(), orders, events, msgs, msgs-uint64(events),
		kills.Load(), natsRestarts.Load(), logs["duplicate publish absorbed"], logs["NATS connection lost"],
		logs["gap in aggregate sequence"], op.Journal().Report(), skips)
	t.Log(report)
	fmt.Println(report)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("the soak ran out of time")
	}
}
