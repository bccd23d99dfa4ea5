package outboxops_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// poisoned answers the relays' publishes: the events in it are refused
// for their own fault, for good.
type poisoned struct {
	mu  sync.Mutex
	ids map[uuid.UUID]bool
}

func (p *poisoned) answer(_ context.Context, e outbox.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ids[e.ID] {
		return outbox.Permanent(errors.New("no route for this event"))
	}
	return nil
}

// deliveries counts rec's acknowledgements of id, and those of them that
// were replays.
func deliveries(rec *outboxtest.Recorder, id uuid.UUID) (n, replays int) {
	for _, e := range rec.Events() {
		if e.ID == id {
			n++
			if e.Replay {
				replays++
			}
		}
	}
	return n, replays
}

// bothSources is a database whose producers wrote one order to
// outbox_events (the poll source's table) and one to the log, each with a
// poison first event, and a poll and a log relay publishing them, each
// order stopped at its quarantined first event.
type bothSources struct {
	ctx       context.Context
	pool      *pgxpool.Pool
	rec       *outboxtest.Recorder
	pub       *poisoned
	polled    []outbox.Event // of order pollOrder, in outbox_events
	logged    []outbox.Event // of order logOrder, in outbox_log
	pollOrder string
	logOrder  string
}

func newBothSources(t *testing.T) *bothSources {
	t.Helper()
	b := &bothSources{ctx: context.Background(), pool: setup(t), pollOrder: "poll-" + uuid.NewString()[:8], logOrder: "log-" + uuid.NewString()[:8]}
	b.polled = testdb.Enqueue(t, b.pool, testdb.Event(t, b.pollOrder, "OrderCreated"), testdb.Event(t, b.pollOrder, "OrderPaid"))
	b.logged = testdb.EnqueueWith(t, b.pool, outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true}),
		testdb.Event(t, b.logOrder, "OrderCreated"), testdb.Event(t, b.logOrder, "OrderPaid"))
	b.pub = &poisoned{ids: map[uuid.UUID]bool{b.polled[0].ID: true, b.logged[0].ID: true}}
	b.rec = &outboxtest.Recorder{Answer: b.pub.answer}
	cfg := outbox.RelayConfig{PollInterval: 50 * time.Millisecond, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, MaxAttempts: 2}
	cfg.Source = "poll"
	poll, err := outbox.NewRelay(b.pool, b.rec, cfg)
	require.NoError(t, err)
	outboxtest.Run(t, poll)
	cfg.Source = "log"
	lr, err := outbox.NewRelay(b.pool, b.rec, cfg)
	require.NoError(t, err)
	outboxtest.Run(t, lr)
	b.waitQuarantined(t)
	return b
}

// waitQuarantined waits until ListAll lists both orders' first events as
// quarantined: outbox_events' event, and the log's hold stuck on its.
func (b *bothSources) waitQuarantined(t *testing.T) outboxops.Listing {
	t.Helper()
	var l outboxops.Listing
	require.Eventually(t, func() bool {
		var err error
		l, err = outboxops.ListAll(b.ctx, b.pool, outboxops.ListOptions{Quarantined: true})
		require.NoError(t, err)
		return len(l.Events) == 1 && len(l.LogHolds) == 1 && l.LogHolds[0].Attempts > 0
	}, 30*time.Second, 20*time.Millisecond, "both orders quarantined")
	require.Equal(t, b.polled[0].ID, l.Events[0].ID)
	require.Equal(t, b.logged[0].ID, *l.LogHolds[0].EventID, "the hold by the event it is stuck on")
	return l
}

// TestListAllStatusAndShowSeeBothTables: the listing of quarantined
// events, the status and show report outbox_events' event and the log's
// alike; the filters apply to both.
func TestListAllStatusAndShowSeeBothTables(t *testing.T) {
	t.Parallel()
	b := newBothSources(t)

	l, err := outboxops.ListAll(b.ctx, b.pool, outboxops.ListOptions{Quarantined: true, AggregateID: b.logOrder})
	require.NoError(t, err)
	require.Empty(t, l.Events)
	require.Len(t, l.LogHolds, 1, "the aggregate filter applies to the log's holds")
	l, err = outboxops.ListAll(b.ctx, b.pool, outboxops.ListOptions{Quarantined: true, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, 1, l.Len(), "the limit bounds the whole listing")
	l, err = outboxops.ListAll(b.ctx, b.pool, outboxops.ListOptions{Pending: true})
	require.NoError(t, err)
	require.Len(t, l.Events, 1, "the poll order's held-back event")
	require.Equal(t, b.polled[1].ID, l.Events[0].ID)
	require.Empty(t, l.LogEvents, "a quarantined hold's events are not pending")

	s, err := outboxops.Status(b.ctx, b.pool)
	require.NoError(t, err)
	require.EqualValues(t, 1, s.Quarantined)
	require.NotNil(t, s.Log, "the log was written")
	require.EqualValues(t, 1, s.Log.Quarantined)
	require.Nil(t, s.CDCSlot, "no cdc slot on this database")
	require.Equal(t, outboxops.SourcePoll, s.Source.Source, "the recorded source")

	for _, c := range []struct {
		id     uuid.UUID
		source string
	}{{b.polled[0].ID, ""}, {b.logged[0].ID, outboxops.SourceLog}} {
		d, err := outboxops.Show(b.ctx, b.pool, c.id)
		require.NoError(t, err)
		require.Equal(t, outboxops.StateQuarantined, d.State)
		require.Equal(t, c.source, d.Source)
		require.Contains(t, string(d.Row), c.id.String())
	}
	_, err = outboxops.Show(b.ctx, b.pool, uuid.New())
	require.ErrorIs(t, err, outboxops.ErrEventNotFound)
}

// TestRetryAndSkipActOnBothTables: Retry and Skip take an event of
// outbox_events or of the log by its ID alone; the log's rules apply to
// its event (only the quarantined hold's head is skipped), and an ID in
// neither table is not found in either.
func TestRetryAndSkipActOnBothTables(t *testing.T) {
	t.Parallel()
	b := newBothSources(t)

	// Retry: each is published again (still poison: quarantined again).
	c, err := outboxops.Retry(b.ctx, b.pool, b.polled[0].ID)
	require.NoError(t, err)
	require.Nil(t, c.Log)
	require.Equal(t, outboxops.StateQuarantined, c.Before.State)
	require.Zero(t, c.After.Attempts)
	// The publisher waits while the test holds its lock, so the log relay
	// cannot fail the retried event again (and quarantine its hold) before
	// the second Retry: on a loaded machine it once did, and that Retry
	// found a quarantined hold to retry.
	b.pub.mu.Lock()
	c, err = outboxops.Retry(b.ctx, b.pool, b.logged[0].ID)
	require.NoError(t, err)
	require.NotNil(t, c.Log, "the log's event")
	require.Equal(t, outboxops.SourceLog, c.Before.Source)
	require.Equal(t, outboxops.StateQuarantined, c.Before.State)
	require.Equal(t, outboxops.StateHeld, c.After.State, "its hold out of quarantine")
	require.Zero(t, c.After.Attempts)
	_, err = outboxops.Retry(b.ctx, b.pool, b.logged[0].ID)
	b.pub.mu.Unlock()
	require.ErrorIs(t, err, outboxops.ErrEventState, "the hold retries on its own now")
	b.waitQuarantined(t)
	_, err = outboxops.Retry(b.ctx, b.pool, uuid.New())
	require.ErrorIs(t, err, outboxops.ErrEventNotFound)
	require.ErrorContains(t, err, "nor is it in the log")

	// Skip: only the hold's head in the log, then both orders go on.
	_, err = outboxops.Skip(b.ctx, b.pool, b.logged[1].ID, "not the head", "ada")
	require.ErrorIs(t, err, outboxops.ErrEventState)
	require.ErrorIs(t, err, outboxops.ErrNotLogHoldHead)
	c, err = outboxops.Skip(b.ctx, b.pool, b.polled[0].ID, "no route, ever", "ada")
	require.NoError(t, err)
	require.Nil(t, c.Log)
	require.Equal(t, outboxops.StateSkipped, c.After.State)
	c, err = outboxops.Skip(b.ctx, b.pool, b.logged[0].ID, "no route, ever", "ada")
	require.NoError(t, err)
	require.NotNil(t, c.Log)
	require.False(t, c.Log.Redelivery)
	require.Equal(t, outboxops.StateSkipped, c.After.State)
	require.Equal(t, "ada", c.After.SkippedBy)
	require.Equal(t, b.logOrder, c.Before.AggregateID, "what a consumer settles")
	require.EqualValues(t, 1, c.Before.Sequence)
	_, err = outboxops.Skip(b.ctx, b.pool, uuid.New(), "gone", "ada")
	require.ErrorIs(t, err, outboxops.ErrEventNotFound)
	require.Eventually(t, func() bool {
		n1, _ := deliveries(b.rec, b.polled[1].ID)
		n2, _ := deliveries(b.rec, b.logged[1].ID)
		return n1 == 1 && n2 == 1
	}, 30*time.Second, 20*time.Millisecond, "each order's next event delivered")
	for _, id := range []uuid.UUID{b.polled[0].ID, b.logged[0].ID} {
		n, _ := deliveries(b.rec, id)
		require.Zero(t, n, "a skipped event is never published")
	}
}

// TestReplayActsOnBothTables: a window that names an order replays it
// whichever table holds its events, with the log's rules for the log's
// (its tail through a hold, the skipped event not delivered), and refuses
// what the log refuses: an order under a hold. A window that names no
// order replays both tables' events too, each order of the log through its
// hold, and leaves an order under a hold out.
func TestReplayActsOnBothTables(t *testing.T) {
	t.Parallel()
	b := newBothSources(t)
	window := func(order string) outboxops.ReplayOptions {
		return outboxops.ReplayOptions{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), AggregateType: "order", AggregateID: order}
	}
	_, err := outboxops.PlanReplay(b.ctx, b.pool, window(b.logOrder))
	require.ErrorIs(t, err, outboxops.ErrLogOrderHeld, "the log's order is under its quarantined hold")
	_, err = outboxops.Replay(b.ctx, b.pool, window(b.logOrder))
	require.ErrorIs(t, err, outboxops.ErrLogOrderHeld)
	all := window("")
	all.AggregateType = ""
	p, err := outboxops.PlanReplay(b.ctx, b.pool, all)
	require.NoError(t, err, "a window that names no order leaves the held one out")
	require.EqualValues(t, 1, p.Log.HeldOrders, "the log's order under its hold")
	require.Zero(t, p.Log.Events)

	for _, id := range []uuid.UUID{b.polled[0].ID, b.logged[0].ID} {
		_, err := outboxops.Skip(b.ctx, b.pool, id, "no route, ever", "ada")
		require.NoError(t, err)
	}
	// Published: outbox_events' once marked, the log's once its cursor
	// passed it with no hold left.
	require.Eventually(t, func() bool {
		l, err := outboxops.ListAll(b.ctx, b.pool, outboxops.ListOptions{Pending: true})
		require.NoError(t, err)
		s, err := outboxops.Status(b.ctx, b.pool)
		require.NoError(t, err)
		return l.Len() == 0 && s.Log != nil && s.Log.Holds == 0 && published(t, b.pool, b.polled[1].ID)
	}, 30*time.Second, 20*time.Millisecond, "both orders' second events published")

	p, err = outboxops.PlanReplay(b.ctx, b.pool, window(b.pollOrder))
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Events, "the skipped event is not replayed")
	require.Zero(t, p.Log.Events)
	p, err = outboxops.PlanReplay(b.ctx, b.pool, window(b.logOrder))
	require.NoError(t, err)
	require.Zero(t, p.Events)
	require.EqualValues(t, 1, p.Log.Events, "the log's skipped event is not replayed")
	require.EqualValues(t, 2, p.Log.FromSequence)
	require.EqualValues(t, 1, p.Total())
	p, err = outboxops.PlanReplay(b.ctx, b.pool, all)
	require.NoError(t, err)
	require.EqualValues(t, 1, p.Events)
	require.EqualValues(t, 1, p.Log.Events, "a window that names no order covers the log's orders too")
	require.EqualValues(t, 1, p.Log.Orders)
	require.Zero(t, p.Log.HeldOrders)

	n, err := outboxops.Replay(b.ctx, b.pool, window(b.pollOrder))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	n, err = outboxops.Replay(b.ctx, b.pool, window(b.logOrder))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	require.Eventually(t, func() bool {
		n1, r1 := deliveries(b.rec, b.polled[1].ID)
		n2, r2 := deliveries(b.rec, b.logged[1].ID)
		return n1 == 2 && r1 == 1 && n2 == 2 && r2 == 1
	}, 30*time.Second, 20*time.Millisecond, "each order's event delivered again, as a replay")

	// A window that names no order: both tables' events again, the log's
	// through its order's hold, once the last replay's hold is gone.
	require.Eventually(t, func() bool {
		s, err := outboxops.Status(b.ctx, b.pool)
		require.NoError(t, err)
		return s.Log != nil && s.Log.Holds == 0
	}, 30*time.Second, 20*time.Millisecond, "the log order's replay hold released")
	n, err = outboxops.Replay(b.ctx, b.pool, all)
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "one event of each table")
	require.Eventually(t, func() bool {
		n1, r1 := deliveries(b.rec, b.polled[1].ID)
		n2, r2 := deliveries(b.rec, b.logged[1].ID)
		return n1 == 3 && r1 == 2 && n2 == 3 && r2 == 2
	}, 30*time.Second, 20*time.Millisecond, "each order's event delivered again by the window's replay")
	for _, id := range []uuid.UUID{b.polled[0].ID, b.logged[0].ID} {
		n, _ := deliveries(b.rec, id)
		require.Zero(t, n, "a skipped event is never published, not even by a replay")
	}
}
