package outbox_test

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
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestSourceRelaySwitchesPollLogCDCPoll: a running database is switched
// poll → log → cdc → poll the way an operator does (outboxops.SetSource,
// what `outboxctl source set` calls) while two relays of the recorded
// source run, producers write to thirty orders with the plain
// outbox.Enqueue throughout, and an operator replays orders' published
// events on every source. Every event is delivered (0 lost), each order's
// events are first delivered in sequence (0 reordered), and a second
// delivery that is not a replay is rare: delivery is at least once (a log
// reader whose advance an operator's replay refused, the holds having
// changed since its read, reads and publishes its batch again; a relay
// stalled past its lease has its batch taken over), and a sink recognises
// a redelivery by the event's ID (Temporal: the workflow ID), so it is no
// second effect; a switch that published again what was already
// delivered would show as many.
func TestSourceRelaySwitchesPollLogCDCPoll(t *testing.T) {
	pool, _ := testdb.NewLogical(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now().Add(-time.Second)

	rec := &outboxtest.Recorder{}
	slot := "t_" + uuid.NewString()[:8]
	var relays sync.WaitGroup
	var startedMu sync.Mutex
	started := map[string][]string{} // relay → the sources it ran, in order
	rctx, stopRelays := context.WithCancel(ctx)
	defer func() { stopRelays(); relays.Wait() }()
	for i := range 2 {
		r, err := outbox.NewRelay(pool, rec, outbox.RelayConfig{
			Owner: fmt.Sprintf("relay-%d", i), Logger: quietLogger(), Lease: 3 * time.Second,
			PollInterval: 100 * time.Millisecond, MarkDelay: 5 * time.Millisecond,
			CDCSlot: slot, CDCGrace: time.Second,
			Started: func(source string, cfg outbox.RelayConfig) {
				startedMu.Lock()
				defer startedMu.Unlock()
				started[cfg.Owner] = append(started[cfg.Owner], source)
			},
		})
		require.NoError(t, err)
		relays.Add(1)
		go func() {
			defer relays.Done()
			if err := r.Run(rctx); err != nil {
				t.Errorf("relay %d: %v", i, err)
			}
		}()
	}

	// Producers: thirty orders, one or two events a transaction.
	var (
		mu       sync.Mutex
		enqueued []outbox.Event
	)
	pctx, stopProducers := context.WithCancel(ctx)
	var producers sync.WaitGroup
	for p := range 3 {
		producers.Add(1)
		go func() {
			defer producers.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 38))
			for pctx.Err() == nil {
				order := fmt.Sprintf("o-%02d", rng.IntN(30))
				var evs []outbox.Event
				for range 1 + rng.IntN(2) {
					e, err := outbox.NewEvent("order", order, "OrderTouched", 1, map[string]string{"order_id": order})
					require.NoError(t, err)
					evs = append(evs, e)
				}
				var out []outbox.Event
				err := pgx.BeginFunc(pctx, pool, func(tx pgx.Tx) error {
					var err error
					out, err = outbox.Enqueue(pctx, tx, evs...)
					return err
				})
				if pctx.Err() != nil {
					return
				}
				require.NoError(t, err)
				mu.Lock()
				enqueued = append(enqueued, out...)
				mu.Unlock()
				time.Sleep(time.Duration(5+rng.IntN(10)) * time.Millisecond)
			}
		}()
	}

	// The operator replays an order's published events now and then, on
	// whichever table holds them (a replay the source refuses for now, an
	// order under a hold, say, is fine: the next one is tried).
	var replays atomic.Int64
	octx, stopOperator := context.WithCancel(ctx)
	var operator sync.WaitGroup
	operator.Add(1)
	go func() {
		defer operator.Done()
		rng := rand.New(rand.NewPCG(7, 38))
		for octx.Err() == nil {
			time.Sleep(300 * time.Millisecond)
			opts := outboxops.ReplayOptions{From: start, To: time.Now(), AggregateType: "order", AggregateID: fmt.Sprintf("o-%02d", rng.IntN(30))}
			if n, err := outboxops.Replay(octx, pool, opts); err == nil && n > 0 {
				replays.Add(1)
			}
		}
	}()

	for _, to := range []string{outboxops.SourceLog, outboxops.SourceCDC, outboxops.SourcePoll} {
		time.Sleep(3 * time.Second)
		_, err := outboxops.SetSource(ctx, pool, to, "test", "poll → log → cdc → poll")
		require.NoError(t, err)
	}
	time.Sleep(3 * time.Second)
	stopOperator()
	operator.Wait()
	stopProducers()
	producers.Wait()

	mu.Lock()
	want := map[uuid.UUID]outbox.Event{}
	inLog := 0
	for _, e := range enqueued {
		want[e.ID] = e
	}
	mu.Unlock()
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox_log`).Scan(&inLog))
	require.Positive(t, inLog, "the producers wrote to the log while it was the source")
	var inEvents int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox_events`).Scan(&inEvents))
	require.Greater(t, inEvents, 0)

	// 0 lost: every event is delivered.
	deadline := time.Now().Add(90 * time.Second)
	for {
		seen := map[uuid.UUID]bool{}
		for _, e := range rec.Events() {
			seen[e.ID] = true
		}
		missing := 0
		for id := range want {
			if !seen[id] {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d of %d events never delivered", missing, len(want))
		time.Sleep(200 * time.Millisecond)
	}

	// 0 reordered: each order's first deliveries come in sequence. Second
	// deliveries that are not replays (redeliveries) are counted; at most
	// one in two hundred events.
	first := map[uuid.UUID]bool{}
	last := map[string]int64{}
	var redelivered []string
	for _, e := range rec.Events() {
		if first[e.ID] {
			if !e.Replay {
				table := "outbox_events"
				if _, err := outboxops.LogEventByID(ctx, pool, e.ID); err == nil {
					table = "outbox_log"
				}
				redelivered = append(redelivered, fmt.Sprintf("%s (%s #%d, %s)", e.ID, e.AggregateID, e.Sequence, table))
			}
			continue
		}
		first[e.ID] = true
		if _, ours := want[e.ID]; !ours {
			continue
		}
		require.Equal(t, last[e.AggregateID]+1, e.Sequence, "order %s: event #%d delivered first after #%d", e.AggregateID, e.Sequence, last[e.AggregateID])
		last[e.AggregateID] = e.Sequence
	}
	require.LessOrEqual(t, len(redelivered), max(5, len(want)/200),
		"%d events delivered again not as a replay, more than lease takeovers explain: %v", len(redelivered), redelivered)
	require.Positive(t, replays.Load(), "the operator replayed something")
	startedMu.Lock()
	for _, owner := range []string{"relay-0", "relay-1"} {
		require.Equal(t, []string{"poll", "log", "cdc", "poll"}, started[owner], "the sources %s followed", owner)
	}
	startedMu.Unlock()
	t.Logf("%d events (%d in the log), %d deliveries, %d replays, %d redeliveries %v", len(want), inLog, len(rec.Events()), replays.Load(), len(redelivered), redelivered)
}

// TestRelayStartsWhileTheDatabaseDropsConnections: a relay that starts
// while its database refuses it (a failover, a restart, an idle-killer
// terminating backends) waits for the database instead of dying, both at
// its first read (the recorded source) and at its source's first count (a
// poll relay's look at what the log holds): the chaos soaks restart a
// relay and terminate backends at once. Each subtest fails the pool's
// acquisitions in [from, to] as a terminated backend would.
func TestRelayStartsWhileTheDatabaseDropsConnections(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to int64
	}{
		{"the recorded source's read", 1, 3},
		{"the log's first count", 2, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, url := testdb.New(t)
			cfg, err := pgxpool.ParseConfig(url)
			require.NoError(t, err)
			var acquired, refused atomic.Int64
			cfg.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) {
				if n := acquired.Add(1); n >= tc.from && n <= tc.to {
					refused.Add(1)
					return false, errors.New("FATAL: terminating connection due to administrator command (SQLSTATE 57P01)")
				}
				return true, nil
			}
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			require.NoError(t, err)
			defer pool.Close()
			rec := newRecorder(nil)
			r, err := outbox.NewRelay(pool, rec, outbox.RelayConfig{Logger: quietLogger(), PollInterval: 50 * time.Millisecond})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			alive := func() {
				select {
				case err := <-done:
					require.NoError(t, err, "the relay died of a refused connection at its start")
					require.Fail(t, "the relay stopped")
				default:
				}
			}
			eventually(t, 10*time.Second, func() bool { alive(); return refused.Load() == tc.to-tc.from+1 }, "the refusals happen")
			e := enqueueWith(t, testdb.Open(t, url), outbox.NewEnqueuer(outbox.EnqueueConfig{}), testdb.Event(t, "o-"+uuid.NewString()[:8], "E1"))[0]
			eventually(t, 10*time.Second, func() bool { alive(); return rec.callsFor(e.ID) > 0 },
				"the event is delivered once the database takes connections again")
			cancel()
			require.NoError(t, <-done)
		})
	}
}
