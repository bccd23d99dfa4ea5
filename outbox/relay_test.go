package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestRelayPublishesEveryEventOnceInOrder: every committed event is acked
// once, in sequence order per aggregate, marked published, and counted.
func TestRelayPublishesEveryEventOnceInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	reg := prometheus.NewRegistry()
	r := b.newRelay(t, outbox.RelayConfig{Registerer: reg, BatchSize: 7, MaxInFlight: 4, GaugeInterval: 50 * time.Millisecond})
	var all []outbox.Event
	for i := range 20 {
		agg := fmt.Sprintf("order-%d", i%5)
		all = append(all, testdb.Enqueue(t, b.pool, testdb.Event(t, agg, "Step"), testdb.Event(t, agg, "Step"))...)
	}
	run(t, r)
	eventually(t, 20*time.Second, func() bool { return published(b.pool, ids(all)...) }, "every event published")

	acked := b.rec.ackedIDs()
	require.Len(t, acked, len(all))
	for _, e := range all {
		require.Equal(t, 1, acked[e.ID], "event %s acked once", e.ID)
		require.Equal(t, r.Owner(), *readRow(t, b.pool, e.ID).ClaimedBy)
	}
	lastSeq := map[string]int64{}
	for _, e := range b.rec.acked {
		require.Equal(t, lastSeq[e.AggregateID]+1, e.Sequence, "aggregate %s published out of order", e.AggregateID)
		lastSeq[e.AggregateID] = e.Sequence
	}
	// Counted once the mark's COMMIT has returned: the rows may read published first.
	eventually(t, 10*time.Second, func() bool {
		v, err := promtest.Sum(reg, "outbox_published_total")
		return err == nil && v == float64(len(all))
	}, "outbox_published_total counts every event")
	require.InDelta(t, float64(len(all)), promtest.Value(t, reg, "outbox_handoff_latency_seconds"), 0)
	eventually(t, 10*time.Second, func() bool {
		v, err := promtest.Sum(reg, "outbox_pending_events")
		return err == nil && v == 0
	}, "pending gauge drops to zero")
}

// TestRelayWakesOnNotify: with a one-hour safety poll, an event committed
// while the relay idles is published within moments, through LISTEN/NOTIFY.
func TestRelayWakesOnNotify(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	r := b.newRelay(t, outbox.RelayConfig{PollInterval: time.Hour})
	run(t, r)
	waitListener(t, b.pool, r.Owner())
	first := testdb.Enqueue(t, b.pool, testdb.Event(t, "n1", "One"))[0]
	eventually(t, 5*time.Second, func() bool { return published(b.pool, first.ID) }, "first event published")

	for i := range 3 {
		ev := testdb.Enqueue(t, b.pool, testdb.Event(t, fmt.Sprintf("n-%d", i), "One"))[0]
		start := time.Now()
		eventually(t, 3*time.Second, func() bool { return published(b.pool, ev.ID) }, "published after NOTIFY")
		t.Logf("commit to published: %s", time.Since(start))
	}
}

// TestRelayListenerReconnects: the listener's backend is killed; the relay
// reconnects, claims once, and later commits are published promptly again.
func TestRelayListenerReconnects(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	r := b.newRelay(t, outbox.RelayConfig{PollInterval: time.Hour})
	run(t, r)
	pid := waitListener(t, b.pool, r.Owner())
	var terminated bool
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, pid).Scan(&terminated))
	require.True(t, terminated)
	// Committed right away, likely while the listener is away: its NOTIFY is
	// lost and the claim after reconnecting must find it.
	lost := testdb.Enqueue(t, b.pool, testdb.Event(t, "during-gap", "One"))[0]
	eventually(t, 10*time.Second, func() bool { return published(b.pool, lost.ID) }, "event committed during the gap published")
	newPid := waitListener(t, b.pool, r.Owner())
	require.NotEqual(t, pid, newPid)
	ev := testdb.Enqueue(t, b.pool, testdb.Event(t, "after-gap", "One"))[0]
	eventually(t, 3*time.Second, func() bool { return published(b.pool, ev.ID) }, "published after reconnect")
}

// TestRelayGracefulShutdown: on cancel the relay stops claiming, lets the
// in-flight publishes finish and marks them, and releases (attempt
// uncounted) the claimed events it never started.
func TestRelayGracefulShutdown(t *testing.T) {
	t.Parallel()
	started := make(chan uuid.UUID, 10)
	unblock := make(chan struct{})
	b := setup(t, func(ctx context.Context, e outbox.Event) error {
		started <- e.ID
		select {
		case <-unblock:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	var events []outbox.Event
	for i := range 5 {
		events = append(events, testdb.Enqueue(t, b.pool, testdb.Event(t, fmt.Sprintf("s-%d", i), "One"))...)
	}
	r := b.newRelay(t, outbox.RelayConfig{MaxInFlight: 2, PollInterval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	inFlight := map[uuid.UUID]bool{<-started: true, <-started: true}

	// Cancel while two publishes hang; they finish only after the cancel.
	// Had Run not waited for them, their acknowledgements would never be
	// marked below.
	cancel()
	close(unblock)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the in-flight publishes finished")
	}

	for _, e := range events {
		row := readRow(t, b.pool, e.ID)
		if inFlight[e.ID] {
			require.NotNil(t, row.PublishedAt, "in-flight publish finished and marked")
			continue
		}
		require.Nil(t, row.PublishedAt)
		require.Nil(t, row.ClaimedBy, "lease released")
		require.Nil(t, row.ClaimUntil)
		require.Zero(t, row.Attempts, "a never-attempted claim does not use up an attempt")
		require.Zero(t, b.rec.callsFor(e.ID))
	}
}

// TestRelayRetriesWithBackoff: a transient failure records the error,
// releases the lease and moves available_at; a later attempt succeeds.
func TestRelayRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	b := setup(t, func(ctx context.Context, e outbox.Event) error {
		if calls.Add(1) <= 2 {
			return errFlaky
		}
		return nil
	})
	ev := testdb.Enqueue(t, b.pool, testdb.Event(t, "flaky", "One"))[0]
	r := b.newRelay(t, outbox.RelayConfig{RetryBase: 200 * time.Millisecond, RetryMax: 300 * time.Millisecond, PollInterval: time.Hour})
	run(t, r)
	eventually(t, 10*time.Second, func() bool { return published(b.pool, ev.ID) }, "published after two failures")
	row := readRow(t, b.pool, ev.ID)
	require.Equal(t, 3, row.Attempts)
	require.NotNil(t, row.LastError)
	require.Contains(t, *row.LastError, errFlaky.Error(), "the last error stays for operators")
	require.Nil(t, row.Quarantined)
}

// TestRelayQuarantinesAfterMaxAttempts: an event that keeps failing is
// quarantined after MaxAttempts and holds back its own aggregate only.
func TestRelayQuarantinesAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	long := errors.New(string(make([]byte, 5000)) + "tail")
	b := setup(t, func(ctx context.Context, e outbox.Event) error {
		if e.AggregateID == "doomed" {
			return fmt.Errorf("%w: %w", errFlaky, long)
		}
		return nil
	})
	reg := prometheus.NewRegistry()
	doomed := testdb.Enqueue(t, b.pool, testdb.Event(t, "doomed", "One"), testdb.Event(t, "doomed", "Two"))
	r := b.newRelay(t, outbox.RelayConfig{MaxAttempts: 3, RetryBase: time.Millisecond, RetryMax: 10 * time.Millisecond,
		PollInterval: 50 * time.Millisecond, Registerer: reg, GaugeInterval: 50 * time.Millisecond})
	run(t, r)
	eventually(t, 10*time.Second, func() bool { return quarantined(b.pool, doomed[0].ID) }, "quarantined after 3 attempts")
	row := readRow(t, b.pool, doomed[0].ID)
	require.Equal(t, 3, row.Attempts)
	require.Equal(t, 3, b.rec.callsFor(doomed[0].ID))
	require.Len(t, *row.LastError, 1000, "last_error is bounded")
	require.Nil(t, row.ClaimedBy)
	require.InDelta(t, 3, promtest.Value(t, reg, "outbox_publish_errors_total"), 0)
	require.InDelta(t, 3, promtest.Value(t, reg, "outbox_publish_errors_total", "fault", "event"), 0, "the event's own fault")
	require.Zero(t, promtest.Value(t, reg, "outbox_publish_errors_total", "fault", "sink"))

	other := testdb.Enqueue(t, b.pool, testdb.Event(t, "healthy", "One"))[0]
	eventually(t, 5*time.Second, func() bool { return published(b.pool, other.ID) }, "other aggregates flow")
	eventually(t, 5*time.Second, func() bool {
		q, err1 := promtest.Sum(reg, "outbox_quarantined_events")
		p, err2 := promtest.Sum(reg, "outbox_pending_events")
		return err1 == nil && err2 == nil && q == 1 && p == 1
	}, "gauges: one quarantined, its successor pending")
	require.Zero(t, b.rec.callsFor(doomed[1].ID), "the successor waits behind its quarantined predecessor")
	require.Zero(t, readRow(t, b.pool, doomed[1].ID).Attempts)
}

// TestRelayQuarantinesPermanentErrorAtOnce: a permanent error quarantines at
// the first attempt; the aggregate's later events wait, others flow.
func TestRelayQuarantinesPermanentErrorAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, func(ctx context.Context, e outbox.Event) error {
		if e.Type == "Poison" {
			return outbox.Permanent(errors.New("no route for event type Poison"))
		}
		return nil
	})
	poison := testdb.Enqueue(t, b.pool, testdb.Event(t, "p", "Poison"), testdb.Event(t, "p", "Fine"))
	healthy := testdb.Enqueue(t, b.pool, testdb.Event(t, "h", "Fine"), testdb.Event(t, "h", "Fine"))
	r := b.newRelay(t, outbox.RelayConfig{PollInterval: 50 * time.Millisecond})
	run(t, r)
	eventually(t, 10*time.Second, func() bool { return quarantined(b.pool, poison[0].ID) }, "poison quarantined")
	eventually(t, 10*time.Second, func() bool { return published(b.pool, ids(healthy)...) }, "other aggregates flow")
	late := testdb.Enqueue(t, b.pool, testdb.Event(t, "late", "Fine"))[0]
	eventually(t, 10*time.Second, func() bool { return published(b.pool, late.ID) }, "later commits flow")

	row := readRow(t, b.pool, poison[0].ID)
	require.Equal(t, 1, row.Attempts, "quarantined at once")
	require.Contains(t, *row.LastError, "no route for event type Poison")
	require.Zero(t, b.rec.callsFor(poison[1].ID), "held back behind the poison")
	require.Nil(t, readRow(t, b.pool, poison[1].ID).PublishedAt)
}

// waitListener waits until the relay's listener connection is LISTENing and
// returns its backend pid.
func waitListener(t *testing.T, pool *pgxpool.Pool, owner string) int32 {
	t.Helper()
	var pid int32
	eventually(t, 10*time.Second, func() bool {
		err := pool.QueryRow(context.Background(),
			`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%' AND state = 'idle'`,
			outbox.ListenerApplicationNameForTest(owner)).Scan(&pid)
		return err == nil
	}, "listener of %s connected", owner)
	return pid
}
