package outbox_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// Where the CDC stream meets an operator's replay: the stream publishes
// what the log hands it, and a replay makes an event unpublished behind or
// under it. These tests hold the stream at the moment that matters with a
// publisher that blocks one event until the test lets it go.

// gate blocks the publishes of one event until opened, and tells when one
// has begun.
type gate struct {
	mu      sync.Mutex
	id      uuid.UUID
	entered chan struct{}
	open    chan struct{}
}

func newGate() *gate {
	return &gate{entered: make(chan struct{}, 16), open: make(chan struct{})}
}

func (g *gate) hold(id uuid.UUID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.id = id
}

// wait blocks e when it is the held event.
func (g *gate) wait(ctx context.Context, e outbox.Event) error {
	g.mu.Lock()
	held := e.ID == g.id
	g.mu.Unlock()
	if !held {
		return nil
	}
	g.entered <- struct{}{}
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the held event's publish never began")
	}
}

// callLog records the order of publish calls.
type callLog struct {
	mu    sync.Mutex
	calls []uuid.UUID
}

func (l *callLog) add(id uuid.UUID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, id)
}

func (l *callLog) snapshot() []uuid.UUID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

func replayOne(t *testing.T, b *testBundle, e outbox.Event) {
	t.Helper()
	n, err := outboxops.Replay(context.Background(), b.pool, outboxops.ReplayOptions{
		From: e.OccurredAt.Add(-time.Second), To: e.OccurredAt.Add(time.Microsecond),
		AggregateType: e.AggregateType, AggregateID: e.AggregateID})
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "replayed %s", e.ID)
}

// TestCDCReplayWaitsForTheStreamsEventInFlight: while the stream publishes
// an order's second event, an operator replays the first. No relay may take
// the replayed event before the stream's publish of the second has ended:
// one event of an order in flight at a time. The stream's lease on what it
// publishes is what the replay's guards see.
func TestCDCReplayWaitsForTheStreamsEventInFlight(t *testing.T) {
	t.Parallel()
	g := newGate()
	lc := newLaneChecker()
	b := setupCDC(t, func(ctx context.Context, e outbox.Event) error {
		lc.enter(e)
		err := g.wait(ctx, e)
		lc.leave(e, err == nil)
		return err
	})
	// The sweeper stays idle (it polls hourly and nothing is handed to it),
	// so the other relay's claim below is the only one that can take the
	// replay.
	r := b.newCDC(t, outbox.CDCConfig{Grace: time.Hour, RelayConfig: outbox.RelayConfig{PollInterval: time.Hour}})
	run(t, r)
	waitStreaming(t, b.pool, r)

	first := testdb.Enqueue(t, b.pool, testdb.Event(t, "a", "Created"))[0]
	eventually(t, 10*time.Second, func() bool { return published(b.pool, first.ID) }, "the stream publishes the first event")
	second := testdb.Event(t, "a", "Cancelled")
	second.ID = uuid.Must(uuid.NewV7())
	g.hold(second.ID)
	testdb.Enqueue(t, b.pool, second)
	g.waitEntered(t)

	replayOne(t, b, first)
	other := b.newRelay(t, outbox.RelayConfig{Owner: "other"})
	require.Empty(t, claimIDs(t, other), "a relay took the replayed first event while the stream publishes the second")

	close(g.open)
	eventually(t, 10*time.Second, func() bool { return published(b.pool, second.ID) }, "the stream publishes the second event")
	got, _, err := other.ClaimForTest(context.Background())
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{first.ID}, ids(got), "then the replay goes")
	require.True(t, got[0].Replay)
	lc.mu.Lock()
	defer lc.mu.Unlock()
	require.Empty(t, lc.errs)
}

// TestCDCReplayedPredecessorHoldsBackTheStream: the stream published and
// marked an order's first event, an operator replayed it, and the order's
// second event commits a moment later. The second must wait for the replay
// of the first: an event the stream marked is no longer the stream's once
// an operator replayed it.
func TestCDCReplayedPredecessorHoldsBackTheStream(t *testing.T) {
	t.Parallel()
	var log callLog
	b := setupCDC(t, func(ctx context.Context, e outbox.Event) error {
		log.add(e.ID)
		return nil
	})
	// An idle sweeper unless the stream hands it something: the replay is
	// delivered only if the stream gives the second event up to it.
	r := b.newCDC(t, outbox.CDCConfig{Grace: time.Hour, RelayConfig: outbox.RelayConfig{PollInterval: time.Hour}})
	run(t, r)
	waitStreaming(t, b.pool, r)

	first := testdb.Enqueue(t, b.pool, testdb.Event(t, "a", "Created"))[0]
	eventually(t, 10*time.Second, func() bool { return published(b.pool, first.ID) }, "the stream publishes the first event")
	replayOne(t, b, first)
	second := testdb.Enqueue(t, b.pool, testdb.Event(t, "a", "Cancelled"))[0]

	eventually(t, 20*time.Second, func() bool { return published(b.pool, first.ID, second.ID) },
		"both published: the replayed first, then the second")
	calls := log.snapshot()
	require.Equal(t, []uuid.UUID{first.ID, first.ID, second.ID}, calls,
		"publish calls in order: the first, its replay, then the second (first=%s second=%s)", first.ID, second.ID)
}

// TestCDCLateMarkKeepsAReplay: while the stream's publish of an event is in
// flight, another relay took the event over (its lease had expired),
// published and marked it, and an operator then replayed it. The stream's
// mark, late, must not swallow the replay: the replay is delivered and the
// row does not end published with its replay still requested.
func TestCDCLateMarkKeepsAReplay(t *testing.T) {
	t.Parallel()
	g := newGate()
	var log callLog
	b := setupCDC(t, func(ctx context.Context, e outbox.Event) error {
		log.add(e.ID)
		return g.wait(ctx, e)
	})
	r := b.newCDC(t, outbox.CDCConfig{Grace: time.Hour})
	run(t, r)
	waitStreaming(t, b.pool, r)

	ev := testdb.Event(t, "a", "Created")
	ev.ID = uuid.Must(uuid.NewV7())
	g.hold(ev.ID)
	ev = testdb.Enqueue(t, b.pool, ev)[0]
	g.waitEntered(t)

	// What a relay that took over an expired lease leaves: its claim, its
	// publish (a call of its own), its mark.
	_, err := b.pool.Exec(context.Background(),
		`UPDATE outbox_events SET claimed_by = 'other', claim_until = NULL, published_at = now() WHERE event_id = $1`, ev.ID)
	require.NoError(t, err)
	replayOne(t, b, ev)
	g.hold(uuid.Nil) // the replay's publish goes through
	close(g.open)

	eventually(t, 20*time.Second, func() bool { return len(log.snapshot()) >= 2 && published(b.pool, ev.ID) },
		"the replay is delivered after the stream's late publish")
	var replayPending bool
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT replay_requested_at IS NOT NULL FROM outbox_events WHERE event_id = $1`, ev.ID).Scan(&replayPending))
	require.False(t, replayPending, "published with its replay still requested: the stream's mark swallowed the replay")
}
