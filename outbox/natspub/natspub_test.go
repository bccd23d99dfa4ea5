package natspub_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/natspub"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testlog"
)

// TestRelayPublishesEachEventOnItsAggregatesSubject: a real relay publishes
// through JetStream; every event is marked published after its PubAck, is
// one message on <prefix>.order.<id> with the event's ID as Nats-Msg-Id and
// its envelope in headers, in per-order sequence.
func TestRelayPublishesEachEventOnItsAggregatesSubject(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	_, js := connect(t)
	stream, prefix := names(t)
	pub, err := natspub.New(context.Background(), js, natspub.Config{Stream: stream, SubjectPrefix: prefix, CreateStream: true})
	require.NoError(t, err)
	require.Equal(t, natspub.ServerWindowDefault, pub.Window(), "a created stream gets at least NATS's default window")

	orderA, orderB := uuid.NewString(), uuid.NewString()
	testdb.Enqueue(t, pool, testdb.Event(t, orderA, "OrderCreated"), testdb.Event(t, orderB, "OrderCreated"))
	testdb.Enqueue(t, pool, testdb.Event(t, orderA, "OrderCancelled"))
	r, err := outbox.NewRelay(pool, pub, outbox.RelayConfig{PollInterval: 50 * time.Millisecond, Logger: testlog.Logger()})
	require.NoError(t, err)
	outboxtest.Run(t, r)
	events := outboxtest.WaitFor(t, pool, outboxtest.Match{}, 30*time.Second, outboxtest.AllPublished)
	require.Len(t, events, 3)

	msgs := messages(t, js, stream)
	require.Len(t, msgs, 3, "one message per event")
	byID := map[string]outboxtest.Event{}
	for _, e := range events {
		require.Equal(t, 1, e.Attempts, "one attempt, the one that was acknowledged")
		byID[e.ID.String()] = e
	}
	var seqA []string
	for _, m := range msgs {
		e, ok := byID[m.Header.Get(nats.MsgIdHdr)]
		require.True(t, ok, "Nats-Msg-Id is an event's ID: %v", m.Header)
		require.Equal(t, prefix+".order."+e.AggregateID, m.Subject)
		require.Equal(t, e.Type, m.Header.Get(natspub.HeaderEventType))
		require.Equal(t, "1", m.Header.Get(natspub.HeaderSchemaVersion))
		require.Equal(t, "order", m.Header.Get(natspub.HeaderAggregateType))
		require.Equal(t, e.AggregateID, m.Header.Get(natspub.HeaderAggregateID))
		require.Equal(t, strconv.FormatInt(e.Sequence, 10), m.Header.Get(natspub.HeaderSequence))
		occurred, err := time.Parse(time.RFC3339Nano, m.Header.Get(natspub.HeaderOccurredAt))
		require.NoError(t, err)
		require.True(t, occurred.Equal(e.OccurredAt), "%s vs %s", occurred, e.OccurredAt)
		require.Empty(t, m.Header.Get(natspub.HeaderReplay))
		require.Equal(t, e.AggregateID, payload(t, m)["order_id"])
		if e.AggregateID == orderA {
			seqA = append(seqA, m.Header.Get(natspub.HeaderSequence))
		}
	}
	require.Equal(t, []string{"1", "2"}, seqA, "one order's events in its sequence")
}

// TestDuplicatePublishIsAbsorbedWithinTheWindow: publishing one event twice
// stores one message; the second PubAck says duplicate, which is an
// acknowledgement, and is counted.
func TestDuplicatePublishIsAbsorbedWithinTheWindow(t *testing.T) {
	t.Parallel()
	_, js := connect(t)
	stream, prefix := names(t)
	createStream(t, js, stream, prefix, time.Minute)
	reg := prometheus.NewRegistry()
	pub, err := natspub.New(context.Background(), js, natspub.Config{Stream: stream, SubjectPrefix: prefix, MinWindow: time.Minute, Registerer: reg})
	require.NoError(t, err)
	e := testdb.Event(t, uuid.NewString(), "OrderCreated")
	e.ID, e.Sequence, e.OccurredAt = uuid.New(), 1, time.Now()
	require.NoError(t, pub.Publish(context.Background(), e))
	require.NoError(t, pub.Publish(context.Background(), e), "a duplicate is acknowledged")
	e.Replay = true
	require.NoError(t, pub.Publish(context.Background(), e), "a replay within the window is absorbed too")
	require.Len(t, messages(t, js, stream), 1)
	require.Equal(t, 2.0, promtest.Value(t, reg, natspub.DuplicatesMetric))

	// A second publisher on the registry shares the counter.
	again, err := natspub.New(context.Background(), js, natspub.Config{Stream: stream, SubjectPrefix: prefix, MinWindow: time.Minute, Registerer: reg})
	require.NoError(t, err)
	require.NoError(t, again.Publish(context.Background(), e))
	require.Equal(t, 3.0, promtest.Value(t, reg, natspub.DuplicatesMetric))
}

// TestNewRefusesAShortWindowAndAMissingStream: a stream whose duplicate
// window is shorter than the relay needs is refused with an error that
// names both durations and the fix; a missing stream is refused unless
// CreateStream; a prefix that is no subject is refused.
func TestNewRefusesAShortWindowAndAMissingStream(t *testing.T) {
	t.Parallel()
	_, js := connect(t)
	stream, prefix := names(t)
	ctx := context.Background()

	_, err := natspub.New(ctx, js, natspub.Config{Stream: stream, SubjectPrefix: prefix})
	require.ErrorContains(t, err, "does not exist")
	require.ErrorContains(t, err, "CreateStream")

	createStream(t, js, stream, prefix, 10*time.Second)
	need := natspub.RequiredWindow(outbox.RelayConfig{})
	require.Equal(t, 70*time.Second, need, "lease 30s + publish timeout 10s + probe max 30s")
	_, err = natspub.New(ctx, js, natspub.Config{Stream: stream, SubjectPrefix: prefix, MinWindow: need})
	require.ErrorContains(t, err, "10s")
	require.ErrorContains(t, err, "1m10s")
	require.ErrorContains(t, err, "duplicate window")
	_, err = natspub.New(ctx, js, natspub.Config{Stream: stream, SubjectPrefix: prefix}) // the default MinWindow
	require.ErrorContains(t, err, "shorter than the 1m10s")

	short := outbox.RelayConfig{Lease: 4 * time.Second, PublishTimeout: time.Second, ProbeBase: time.Second, ProbeMax: 5 * time.Second}
	require.Equal(t, 10*time.Second, natspub.RequiredWindow(short))
	pub, err := natspub.New(ctx, js, natspub.Config{Stream: stream, SubjectPrefix: prefix, MinWindow: natspub.RequiredWindow(short)})
	require.NoError(t, err, "a relay that needs no more than the window")
	require.Equal(t, 10*time.Second, pub.Window())

	_, err = natspub.New(ctx, js, natspub.Config{Stream: stream, SubjectPrefix: "bad.*"})
	require.ErrorContains(t, err, "SubjectPrefix")
}

// TestPublishClassifiesWhoseFault: an aggregate ID that is no subject token
// and a message larger than the stream takes are the event's permanent
// fault; a closed connection is the sink's.
func TestPublishClassifiesWhoseFault(t *testing.T) {
	t.Parallel()
	nc, js := connect(t)
	stream, prefix := names(t)
	_, err := js.CreateStream(context.Background(), jetstreamConfig(stream, prefix, 256))
	require.NoError(t, err)
	pub, err := natspub.New(context.Background(), js, natspub.Config{Stream: stream, SubjectPrefix: prefix})
	require.NoError(t, err)
	ctx := context.Background()

	bad := testdb.Event(t, "a.b", "OrderCreated")
	bad.ID = uuid.New()
	err = pub.Publish(ctx, bad)
	require.ErrorIs(t, err, outbox.ErrPermanent)
	require.ErrorContains(t, err, "subject token")

	big := testdb.Event(t, uuid.NewString(), "OrderCreated")
	big.ID, big.Payload = uuid.New(), []byte(`{"note":"`+strings.Repeat("x", 400)+`"}`)
	err = pub.Publish(ctx, big)
	require.ErrorIs(t, err, outbox.ErrPermanent, "%v", err)
	require.NotErrorIs(t, err, outbox.ErrSinkUnavailable)
	require.ErrorContains(t, err, "skip it (outboxctl skip): its consumers then get a tombstone in its place", "the fix is named")

	require.NoError(t, pub.Probe(ctx))
	nc.Close()
	ok := testdb.Event(t, uuid.NewString(), "OrderCreated")
	ok.ID = uuid.New()
	err = pub.Publish(ctx, ok)
	require.ErrorIs(t, err, outbox.ErrSinkUnavailable, "%v", err)
	require.NotErrorIs(t, err, outbox.ErrPermanent)
	require.Error(t, pub.Probe(ctx))
}

// TestSinkDownCostsNoAttempts: a real relay publishing over a connection
// that is gone gives every attempt back: the events stay unpublished with
// attempt_count 0 and the sink's error recorded, however many times the
// relay tries (MaxAttempts 2 would have quarantined them otherwise).
func TestSinkDownCostsNoAttempts(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	nc, js := connect(t)
	stream, prefix := names(t)
	pub, err := natspub.New(context.Background(), js, natspub.Config{Stream: stream, SubjectPrefix: prefix, CreateStream: true})
	require.NoError(t, err)
	nc.Close()
	testdb.Enqueue(t, pool, testdb.Event(t, uuid.NewString(), "OrderCreated"), testdb.Event(t, uuid.NewString(), "OrderCreated"))
	r, err := outbox.NewRelay(pool, pub, outbox.RelayConfig{
		PollInterval: 20 * time.Millisecond, MaxAttempts: 2, RetryBase: time.Millisecond, RetryMax: 10 * time.Millisecond,
		BreakerThreshold: 100, Logger: testlog.Logger(),
	})
	require.NoError(t, err)
	stop := outboxtest.Run(t, r)
	outboxtest.WaitFor(t, pool, outboxtest.Match{}, 30*time.Second, func(events []outboxtest.Event) bool {
		for _, e := range events {
			if !strings.Contains(e.LastError, "connection closed") {
				return false
			}
		}
		return true
	}, "the relay tried every event")
	time.Sleep(time.Second) // many more tries
	stop()
	for _, e := range outboxtest.Events(t, pool, outboxtest.Match{}) {
		require.Nil(t, e.PublishedAt, "%s", e)
		require.Nil(t, e.QuarantinedAt, "%s", e)
		require.Zero(t, e.Attempts, "%s: the sink's fault costs no attempt", e)
	}
}

// TestRelayCrashAfterPubAck: a relay dies (SIGKILL) after the PubAck,
// before the mark. The relay that takes the lease over publishes the event
// again; the stream keeps one message (Nats-Msg-Id within the window) and
// answers duplicate, and the event is marked once.
func TestRelayCrashAfterPubAck(t *testing.T) {
	if proc.IsChild(t) {
		crashChild(t)
		return
	}
	t.Parallel()
	pool, dbURL := testdb.New(t)
	_, js := connect(t)
	stream, prefix := names(t)
	relayCfg := outbox.RelayConfig{Lease: 2 * time.Second, PublishTimeout: time.Second, ProbeMax: 2 * time.Second,
		PollInterval: 50 * time.Millisecond, Logger: testlog.Logger()}
	createStream(t, js, stream, prefix, natspub.RequiredWindow(relayCfg))
	e := testdb.Enqueue(t, pool, testdb.Event(t, uuid.NewString(), "OrderCreated"))[0]

	proc.RerunKilled(t, failpoints.JetStreamAfterAck, "CHILD_DATABASE_URL="+dbURL, "CHILD_STREAM="+stream, "CHILD_PREFIX="+prefix)
	require.Len(t, messages(t, js, stream), 1, "the stream stored the event before the crash")
	require.Nil(t, outboxtest.RequireEnqueued(t, pool, outboxtest.Match{ID: e.ID}).PublishedAt, "not marked")

	reg := prometheus.NewRegistry()
	pub, err := natspub.New(context.Background(), js, natspub.Config{Stream: stream, SubjectPrefix: prefix,
		MinWindow: natspub.RequiredWindow(relayCfg), Registerer: reg})
	require.NoError(t, err)
	r, err := outbox.NewRelay(pool, pub, relayCfg)
	require.NoError(t, err)
	outboxtest.Run(t, r)
	outboxtest.WaitFor(t, pool, outboxtest.Match{ID: e.ID}, 30*time.Second, outboxtest.AllPublished)
	require.Len(t, messages(t, js, stream), 1, "the republish was deduplicated by the stream")
	require.Equal(t, 1.0, promtest.Value(t, reg, natspub.DuplicatesMetric), "answered as a duplicate")
}

// crashChild is the relay of TestRelayCrashAfterPubAck's child process.
func crashChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fps, err := failpoints.Parse(os.Getenv(failpoints.EnvVar))
	require.NoError(t, err)
	pool, err := pgxpool.New(ctx, os.Getenv("CHILD_DATABASE_URL"))
	require.NoError(t, err)
	defer pool.Close()
	_, js := connect(t)
	pub, err := natspub.New(ctx, js, natspub.Config{Stream: os.Getenv("CHILD_STREAM"), SubjectPrefix: os.Getenv("CHILD_PREFIX"),
		MinWindow: time.Second, Failpoints: fps})
	require.NoError(t, err)
	r, err := outbox.NewRelay(pool, pub, outbox.RelayConfig{Lease: 2 * time.Second, PublishTimeout: time.Second, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	err = r.Run(ctx)
	t.Fatalf("the relay survived the failpoint: %v", errors.Join(err, ctx.Err()))
}

// TestPublishSkipIsATombstone: an operator's skip is published as a
// tombstone on the event's subject: its ID as Nats-Msg-Id, its headers and
// Outflow-Skipped, no body. The tombstone of an event the stream stored
// already is absorbed as its duplicate, and that of an aggregate with no
// subject is acknowledged with nothing published.
func TestPublishSkipIsATombstone(t *testing.T) {
	t.Parallel()
	_, js := connect(t)
	stream, prefix := names(t)
	createStream(t, js, stream, prefix, time.Minute)
	reg := prometheus.NewRegistry()
	pub, err := natspub.New(context.Background(), js, natspub.Config{Stream: stream, SubjectPrefix: prefix, MinWindow: time.Minute, Registerer: reg})
	require.NoError(t, err)
	ctx := context.Background()
	event := func(aggregateID string, seq int64) outbox.Event {
		e := testdb.Event(t, aggregateID, "OrderNoted")
		e.ID, e.Sequence, e.OccurredAt, e.Skipped = uuid.New(), seq, time.Now(), true
		return e
	}

	skipped := event(uuid.NewString(), 2)
	require.NoError(t, pub.PublishSkip(ctx, skipped))
	stored := event(uuid.NewString(), 1)
	require.NoError(t, pub.Publish(ctx, stored))
	require.NoError(t, pub.PublishSkip(ctx, stored), "the stream has the event itself: the tombstone is its duplicate")
	require.NoError(t, pub.PublishSkip(ctx, event("a.b", 1)), "no subject, nothing on the stream: acknowledged")

	msgs := messages(t, js, stream)
	require.Len(t, msgs, 2, "the tombstone, and the event the stream had")
	m := msgs[0]
	require.Equal(t, prefix+".order."+skipped.AggregateID, m.Subject)
	require.Equal(t, skipped.ID.String(), m.Header.Get(nats.MsgIdHdr))
	require.Equal(t, "true", m.Header.Get(natspub.HeaderSkipped))
	require.Equal(t, "2", m.Header.Get(natspub.HeaderSequence))
	require.Equal(t, "OrderNoted", m.Header.Get(natspub.HeaderEventType))
	require.Equal(t, "order", m.Header.Get(natspub.HeaderAggregateType))
	require.Equal(t, skipped.AggregateID, m.Header.Get(natspub.HeaderAggregateID))
	require.Empty(t, m.Data, "no payload")
	require.Equal(t, stored.ID.String(), msgs[1].Header.Get(nats.MsgIdHdr))
	require.Empty(t, msgs[1].Header.Get(natspub.HeaderSkipped), "the event's own message stands")
	require.Equal(t, 1.0, promtest.Value(t, reg, natspub.DuplicatesMetric))
}
