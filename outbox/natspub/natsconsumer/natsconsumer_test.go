package natsconsumer_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/inbox"
	"github.com/outflow/outflow/outbox/natspub/natsconsumer"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
	// The order app's tables in testdb's template (it migrates the sets
	// the binary registers).
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testlog"
)

// newInbox returns an inbox and its duplicates counter.
func newInbox(t *testing.T) (*inbox.Inbox, *prometheus.CounterVec) {
	t.Helper()
	reg := prometheus.NewRegistry()
	ib, err := inbox.New(reg)
	require.NoError(t, err)
	// A second registration hands back the inbox's own counter.
	probe := prometheus.NewCounterVec(prometheus.CounterOpts{Name: inbox.DuplicatesMetric, Help: "Event deliveries the inbox (processed_events) acknowledged without effect, by consumer."}, []string{inbox.ConsumerLabel})
	var are prometheus.AlreadyRegisteredError
	require.ErrorAs(t, reg.Register(probe), &are)
	return ib, are.ExistingCollector.(*prometheus.CounterVec)
}

func newConsumer(t *testing.T, js natsconsumerJS, pool *pgxpool.Pool, p projection, cfg natsconsumer.Config) *natsconsumer.Consumer {
	t.Helper()
	cfg.Positions, cfg.Apply = p, p.apply
	cfg.FetchWait = cmpOr(cfg.FetchWait, 200*time.Millisecond)
	cfg.RetryDelay = cmpOr(cfg.RetryDelay, 100*time.Millisecond)
	c, err := natsconsumer.New(context.Background(), js, pool, cfg)
	require.NoError(t, err)
	return c
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// TestAppliesEachEventOnceInOrderAndAcksAfterCommit: events of two orders,
// one of them stored twice (published again after the stream's duplicate
// window, as a late replay is), are each applied once, in each order's
// sequence; the stored duplicate is acknowledged without effect and
// counted by the inbox; nothing stays unacknowledged.
func TestAppliesEachEventOnceInOrderAndAcksAfterCommit(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	js := connect(t)
	stream, prefix := testStream(t, js, 100*time.Millisecond)
	pub := publisher(t, js, stream, prefix)
	ctx := context.Background()
	a, b := uuid.NewString(), uuid.NewString()
	a1, a2, b1 := orderEvent(a, 1, "OrderCreated"), orderEvent(a, 2, "OrderCancelled"), orderEvent(b, 1, "OrderCreated")
	for _, e := range []outbox.Event{a1, b1, a2} {
		require.NoError(t, pub.Publish(ctx, e))
	}
	time.Sleep(300 * time.Millisecond) // past the window: the stream stores the next one again
	require.NoError(t, pub.Publish(ctx, a1))
	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	require.Equal(t, uint64(4), s.CachedInfo().State.Msgs, "the late duplicate is stored")

	p := newProjection(t, pool)
	ib, dups := newInbox(t)
	run(t, newConsumer(t, js, pool, p, natsconsumer.Config{Name: "projection", Stream: stream, Inbox: ib}))
	require.Eventually(t, func() bool {
		ackPending, notDelivered := pending(t, js, stream, "projection")
		return ackPending == 0 && notDelivered == 0
	}, 30*time.Second, 50*time.Millisecond, "every message acknowledged")
	got := p.applied(t)
	require.ElementsMatch(t, []applied{{a1.ID, a, 1}, {b1.ID, b, 1}, {a2.ID, a, 2}}, got, "each event applied once")
	var seqA []int64
	for _, g := range got {
		if g.AggregateID == a {
			seqA = append(seqA, g.Sequence)
		}
	}
	require.Equal(t, []int64{1, 2}, seqA, "one order's events in its sequence")
	require.Equal(t, 1.0, testutil.ToFloat64(dups.WithLabelValues("projection")), "the stored duplicate absorbed by the inbox")
}

// TestGapIsNamedAndWaitsForItsPredecessor: an order's second event reaches
// the stream before its first (as when the first's apply failed and is
// retried). The second is not applied before the first: the consumer logs
// the gap and delivers it again later, and both end applied in sequence.
func TestGapIsNamedAndWaitsForItsPredecessor(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	js := connect(t)
	stream, prefix := testStream(t, js, time.Minute)
	pub := publisher(t, js, stream, prefix)
	ctx := context.Background()
	a := uuid.NewString()
	a1, a2 := orderEvent(a, 1, "OrderCreated"), orderEvent(a, 2, "OrderCancelled")
	require.NoError(t, pub.Publish(ctx, a2))

	p := newProjection(t, pool)
	ib, _ := newInbox(t)
	var logs testlog.SyncBuffer
	run(t, newConsumer(t, js, pool, p, natsconsumer.Config{Name: "projection", Stream: stream, Inbox: ib, Logger: bufferLogger(&logs)}))
	require.Eventually(t, func() bool {
		return countOf(logs.String(), "gap in aggregate sequence") >= 2
	}, 30*time.Second, 20*time.Millisecond, "the gap is logged, and the message comes again")
	require.Contains(t, logs.String(), "missing_from=1")
	require.Empty(t, p.applied(t), "nothing applied past the gap")

	require.NoError(t, pub.Publish(ctx, a1))
	require.Eventually(t, func() bool { return len(p.applied(t)) == 2 }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, []applied{{a1.ID, a, 1}, {a2.ID, a, 2}}, p.applied(t), "applied in sequence once the gap closed")
}

// TestMalformedMessageIsTerminated: a message without the outbox's headers
// is terminated (logged, not retried) and does not hold back the next one.
func TestMalformedMessageIsTerminated(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	js := connect(t)
	stream, prefix := testStream(t, js, time.Minute)
	ctx := context.Background()
	_, err := js.Publish(ctx, prefix+".order.x", []byte(`{}`))
	require.NoError(t, err)
	good := orderEvent(uuid.NewString(), 1, "OrderCreated")
	require.NoError(t, publisher(t, js, stream, prefix).Publish(ctx, good))

	p := newProjection(t, pool)
	ib, _ := newInbox(t)
	var logs testlog.SyncBuffer
	run(t, newConsumer(t, js, pool, p, natsconsumer.Config{Name: "projection", Stream: stream, Inbox: ib, Logger: bufferLogger(&logs)}))
	require.Eventually(t, func() bool { return len(p.applied(t)) == 1 }, 30*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		ackPending, notDelivered := pending(t, js, stream, "projection")
		return ackPending == 0 && notDelivered == 0
	}, 10*time.Second, 20*time.Millisecond, "the malformed message is not pending")
	require.Contains(t, logs.String(), "message without the outbox's headers terminated")
	require.Contains(t, logs.String(), nats.MsgIdHdr)
}

// TestNewRefusesAnIncompleteConfig: the mandatory fields are named.
func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	t.Parallel()
	js := connect(t)
	ib, _ := newInbox(t)
	_, err := natsconsumer.New(context.Background(), js, nil, natsconsumer.Config{Inbox: ib})
	require.ErrorContains(t, err, "Config.Name")
	_, err = natsconsumer.New(context.Background(), js, nil, natsconsumer.Config{Name: "x"})
	require.ErrorContains(t, err, "Config.Inbox")
	_, err = natsconsumer.New(context.Background(), js, nil, natsconsumer.Config{Name: "x", Inbox: ib})
	require.ErrorContains(t, err, "Config.Positions")
}

// TestCrashAfterCommitAppliesOnce: the consumer dies (SIGKILL) after its
// transaction committed, before the ack. The message comes again after
// AckWait to the restarted consumer, whose inbox says it was applied: it
// is acknowledged without a second effect, and the next event is applied.
func TestCrashAfterCommitAppliesOnce(t *testing.T) {
	if proc.IsChild(t) {
		crashChild(t)
		return
	}
	t.Parallel()
	pool, dbURL := testdb.New(t)
	js := connect(t)
	stream, prefix := testStream(t, js, time.Minute)
	pub := publisher(t, js, stream, prefix)
	ctx := context.Background()
	a := uuid.NewString()
	a1, a2 := orderEvent(a, 1, "OrderCreated"), orderEvent(a, 2, "OrderCancelled")
	require.NoError(t, pub.Publish(ctx, a1))
	require.NoError(t, pub.Publish(ctx, a2))
	p := newProjection(t, pool)

	proc.RerunKilled(t, failpoints.JetStreamConsumerAfterCommit, "CHILD_DATABASE_URL="+dbURL, "CHILD_STREAM="+stream)
	require.Equal(t, []applied{{a1.ID, a, 1}}, p.applied(t), "the first event's effect committed before the crash")

	ib, dups := newInbox(t)
	run(t, newConsumer(t, js, pool, p, natsconsumer.Config{Name: "projection", Stream: stream, Inbox: ib, AckWait: time.Second}))
	require.Eventually(t, func() bool {
		ackPending, notDelivered := pending(t, js, stream, "projection")
		return ackPending == 0 && notDelivered == 0 && len(p.applied(t)) == 2
	}, 30*time.Second, 50*time.Millisecond, "the redelivery acknowledged and the next event applied")
	require.Equal(t, []applied{{a1.ID, a, 1}, {a2.ID, a, 2}}, p.applied(t), "each applied once, in sequence")
	require.Equal(t, 1.0, testutil.ToFloat64(dups.WithLabelValues("projection")), "the redelivery was the inbox's duplicate")
}

// crashChild is the consumer of TestCrashAfterCommitAppliesOnce's child.
func crashChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fps, err := failpoints.Parse(os.Getenv(failpoints.EnvVar))
	require.NoError(t, err)
	pool, err := pgxpool.New(ctx, os.Getenv("CHILD_DATABASE_URL"))
	require.NoError(t, err)
	defer pool.Close()
	js := connect(t)
	ib, err := inbox.New(nil)
	require.NoError(t, err)
	c := newConsumer(t, js, pool, projection{pool: pool}, natsconsumer.Config{Name: "projection", Stream: os.Getenv("CHILD_STREAM"),
		Inbox: ib, AckWait: time.Second, Failpoints: fps})
	err = c.Run(ctx)
	t.Fatalf("the consumer survived the failpoint: %v", errors.Join(err, ctx.Err()))
}
