// Package sourcetest is the conformance suite every relay source passes:
// a source proves itself by running [Run] against a fresh database of its
// own, the way Watermill's backends run pubsub/tests. outflow's sources run
// it (poll, cdc and log, in package outbox's TestSourceConformance):
//
//	func TestSourceConformance(t *testing.T) {
//		for _, name := range []string{"poll", "cdc", "log"} {
//			t.Run(name, func(t *testing.T) {
//				sourcetest.Run(t, sourcetest.Source{Name: name, DB: newLogicalDatabase})
//			})
//		}
//	}
//
// The suite is source-agnostic: every case records the source in the
// database (outboxops.SetSource), writes with the producers' plain
// [outbox.Enqueue] and runs [outbox.NewRelay], which reads the
// recorded source; an operator's action is the one the action table of
// docs/operations.md names, on whichever table holds the event. The cases,
// each a subtest whose name says the rule:
//
//   - lane order: many orders written by concurrent producers, read by
//     concurrent relays: every event is delivered and each order's events
//     are first delivered in sequence.
//   - at least once: a publish that fails for a while is retried until it
//     is delivered; nothing is lost and the order waits for it.
//   - the ACK gap: a relay that dies after the sink acknowledged an event
//     but before it recorded the delivery (its process gone: it can write
//     nothing more) leaves the event to the next relay, which delivers it
//     again: never lost, and its order follows in sequence.
//   - lease expiry: a relay that dies holding events (claimed, leased,
//     not published) leaves them to another relay once the lease ended,
//     and not before.
//   - poison → quarantine: a permanent refusal quarantines the event at
//     once; its order's later events wait behind it, other orders flow.
//   - operator actions (outboxops' functions, which act on whichever table
//     holds the event): the quarantine listing names exactly the
//     quarantined events; retry of a quarantined event delivers it, then its
//     order's rest in sequence; skip never delivers it, not by a later
//     replay either, and the order goes on; replay delivers the order's
//     delivered events again as replays (Event.Replay), in sequence, never
//     a skipped one; so does a replay of a window that names no order, for
//     every order in it.
//   - switch: while producers write, the database is switched from the
//     source to each other source and back: no event is lost, and each
//     order's first deliveries come in sequence.
//   - long transaction: a producer's transaction that stays open, its event
//     written before others commit theirs, does not make the relays lose
//     or reorder events (it may delay them: the log source reads up to the
//     oldest open transaction); its event is delivered once it commits.
//   - retention racing a replay: retention (outboxops.Cleanup and
//     outboxops.RetainLog with a tiny retention) runs while replays of the
//     delivered events are requested: a replay is refused or delivers its
//     whole window again, never part of it.
//
// The suite needs a PostgreSQL server with wal_level=logical (the switch
// case runs the cdc source) and nothing else: the sink is an
// [outboxtest.Recorder].
package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
)

// Source is what a source's test tells the suite about it.
type Source struct {
	// Name is the source as the database records it: "poll", "cdc" or
	// "log" (outboxops.SetSource). Mandatory.
	Name string
	// DB returns a fresh, migrated outbox database of its own (no other
	// relay reads it) on a server with wal_level=logical, closed and
	// dropped when t ends. The suite asks for one per case. Mandatory.
	DB func(t *testing.T) *pgxpool.Pool
	// Timeout bounds each wait for deliveries. Optional: defaulted to 30
	// seconds.
	Timeout time.Duration
	// Logger receives the relays' logs. Optional: defaulted to a logger that
	// discards everything.
	Logger *slog.Logger
}

// lease is the relays' lease in every case: short, so the lease expiry case
// takes seconds.
const lease = 2 * time.Second

// validate returns what is missing from s, every field at once.
func (s Source) validate() error {
	var missing []error
	if _, err := outboxops.ParseSource(s.Name); err != nil {
		missing = append(missing, fmt.Errorf("sourcetest: Source.Name %q: %w: name the source as outboxops.SetSource records it", s.Name, err))
	}
	if s.DB == nil {
		missing = append(missing, errors.New("sourcetest: Source.DB is nil: return a fresh migrated outbox database"))
	}
	return errors.Join(missing...)
}

func (s *Source) setDefaults() {
	if s.Timeout <= 0 {
		s.Timeout = 30 * time.Second
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
}

// Run runs every case of the suite against s, each a subtest of t.
func Run(t *testing.T, s Source) {
	t.Helper()
	require.NoError(t, s.validate())
	s.setDefaults()
	t.Run("lane order", s.laneOrder)
	t.Run("at least once", s.atLeastOnce)
	t.Run("the ACK gap", s.ackGap)
	t.Run("lease expiry", s.leaseExpiry)
	t.Run("poison to quarantine", s.poison)
	t.Run("operator actions", s.operatorActions)
	t.Run("switch", s.switches)
	t.Run("long transaction", s.longTransaction)
	t.Run("retention racing a replay", s.retentionRacingReplay)
}

// laneOrder: many orders, concurrent producers and relays; every event is
// delivered, each order's first deliveries in sequence.
func (s Source) laneOrder(t *testing.T) {
	c := s.newCase(t)
	for i := range 3 {
		c.relay(fmt.Sprintf("relay-%d", i), c.rec, c.pool)
	}
	orders := c.orders(20)
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 10 {
				c.enqueue(orders[(p*7+round*3)%len(orders)], 1+round%3)
			}
		}()
	}
	wg.Wait()
	c.waitDelivered(c.written())
	c.requireFirstInSequence()
}

// atLeastOnce: a publish that fails transiently is retried and delivered,
// and its order's later events wait for it.
func (s Source) atLeastOnce(t *testing.T) {
	c := s.newCase(t)
	var failures sync.Map // event ID → failures so far
	var flaky atomic.Value
	flaky.Store(uuid.Nil)
	c.rec.Answer = func(_ context.Context, e outbox.Event) error {
		if e.ID != flaky.Load().(uuid.UUID) {
			return nil
		}
		n, _ := failures.LoadOrStore(e.ID, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) <= 2 {
			return errors.New("sourcetest: the sink refused this event, for now")
		}
		return nil
	}
	order, other := c.order(), c.order()
	evs := c.prepare(order, 3)
	flaky.Store(evs[1].ID)
	c.relay("relay-0", c.rec, c.pool)
	c.streaming() // the stream, not only the backfill, meets the failure
	evs = c.enqueueEvents(evs...)
	c.enqueue(other, 3)
	c.waitDelivered(c.written())
	c.requireFirstInSequence()
	n, _ := failures.Load(evs[1].ID)
	require.EqualValues(t, 3, n.(*atomic.Int32).Load(), "the flaky event was attempted until its third attempt was acknowledged")
	require.Equal(t, 1, c.deliveries(evs[1].ID), "a failed publish is no delivery; the event is delivered once")
}

// ackGap: a relay dies after the sink acknowledged, before it recorded the
// delivery; the next relay delivers the event again, then the rest.
func (s Source) ackGap(t *testing.T) {
	c := s.newCase(t)
	order := c.order()
	evs := c.enqueue(order, 3)
	dying := c.dyingRelay("relay-dies")
	dying.pub = func(ctx context.Context, e outbox.Event) error {
		if err := c.rec.Publish(ctx, e); err != nil {
			return err
		}
		if e.ID == evs[0].ID {
			dying.die() // acknowledged; the relay can record nothing more
		}
		return nil
	}
	dying.start()
	dying.waitDead()
	require.Equal(t, 1, c.deliveries(evs[0].ID), "the dying relay delivered the first event once")
	c.relay("relay-next", c.rec, c.pool)
	c.waitDelivered(evs)
	c.requireFirstInSequence()
	c.waitFor(func() bool { return c.deliveries(evs[0].ID) >= 2 },
		"the event whose delivery the dead relay never recorded is delivered again by the next relay")
	require.Equal(t, 2, c.deliveries(evs[0].ID), "delivered once by the dead relay and once by the next")
}

// leaseExpiry: a relay dies holding events; another takes them over once the
// lease ended, not before.
func (s Source) leaseExpiry(t *testing.T) {
	c := s.newCase(t)
	order, other := c.order(), c.order()
	evs := c.enqueue(order, 3)
	evs = append(evs, c.enqueue(other, 2)...)
	var (
		taken   outbox.Event // the event the dead relay was publishing
		claimed time.Time
	)
	dying := c.dyingRelay("relay-dies")
	var takeOnce sync.Once
	dying.pub = func(ctx context.Context, e outbox.Event) error {
		takeOnce.Do(func() { taken, claimed = e, time.Now() })
		dying.die() // the publish never ends for the relay: it holds what it took
		return errors.New("sourcetest: the relay's process is gone")
	}
	dying.start()
	dying.waitDead()
	require.Empty(t, c.rec.Events(), "the dead relay delivered nothing")
	var (
		mu    sync.Mutex
		again time.Time // when the next relay first delivered taken
	)
	c.rec.Answer = func(_ context.Context, e outbox.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if e.ID == taken.ID && again.IsZero() {
			again = time.Now()
		}
		return nil
	}
	c.relay("relay-next", c.rec, c.pool)
	c.waitDelivered(evs)
	c.requireFirstInSequence()
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, again.Sub(claimed), lease/2,
		"another relay delivered %s/#%d %s after the dead relay took it, within the %s lease: no relay may take over an event before its lease ends",
		taken.AggregateID, taken.Sequence, again.Sub(claimed), lease)
}

// poison: a permanent refusal quarantines the event; its order's later
// events wait, other orders flow.
func (s Source) poison(t *testing.T) {
	c := s.newCase(t)
	order, other := c.order(), c.order()
	evs := c.prepare(order, 3)
	c.refuse(evs[1].ID)
	c.relay("relay-0", c.rec, c.pool)
	c.streaming() // the stream, not only the backfill, meets the failure
	evs = c.enqueueEvents(evs...)
	c.waitQuarantined(evs[1])
	later := c.enqueue(other, 2)
	c.waitDelivered(append([]outbox.Event{evs[0]}, later...))
	c.settle()
	c.requireDelivered(order, []outbox.Event{evs[0]}, nil, "a quarantined event holds its order's later events back")
	require.Equal(t, 1, c.rec.Attempts()-len(c.rec.Events()), "a permanent refusal is attempted once, then quarantined")
	c.requireFirstInSequence()
}

// operatorActions: retry, skip and replay, as the action table says.
func (s Source) operatorActions(t *testing.T) {
	c := s.newCase(t)
	retried, skipped := c.order(), c.order()
	r := c.prepare(retried, 3)
	sk := c.prepare(skipped, 3)
	c.refuse(r[1].ID, sk[1].ID)
	c.relay("relay-0", c.rec, c.pool)
	r = c.enqueueEvents(r...)
	sk = c.enqueueEvents(sk...)
	c.waitQuarantined(r[1])
	c.waitQuarantined(sk[1])

	t.Run("quarantine listing", func(t *testing.T) {
		c := c.on(t)
		require.ElementsMatch(t, []uuid.UUID{r[1].ID, sk[1].ID}, c.quarantined(),
			"the quarantine listing names the two refused events (the head of each held order), and nothing else")
	})
	t.Run("retry", func(t *testing.T) {
		c := c.on(t)
		c.cure(r[1].ID)
		c.retry(r[1])
		c.waitDelivered(r)
		c.requireDelivered(retried, r, nil, "a retried event is delivered, then its order's later events, in sequence")
	})
	t.Run("skip", func(t *testing.T) {
		c := c.on(t)
		c.skip(sk[1])
		c.waitDelivered([]outbox.Event{sk[0], sk[2]})
		c.settle()
		c.requireDelivered(skipped, []outbox.Event{sk[0], sk[2]}, nil, "a skipped event is never delivered; its order goes on")
	})
	t.Run("replay", func(t *testing.T) {
		c := c.on(t)
		require.NoError(t, outboxops.RecordReplayHorizon(c.ctx, c.pool, time.Hour, "sourcetest"))
		window := outboxops.ReplayOptions{From: c.start, To: time.Now().Add(time.Minute), AggregateType: aggregateType}
		window.AggregateID = skipped
		require.EqualValues(t, 2, c.replay(window), "the replay of an order counts its delivered events, never its skipped one")
		window.AggregateID = retried
		require.EqualValues(t, 3, c.replay(window), "the replay of an order counts its delivered events")
		c.waitFor(func() bool { return len(c.deliveredOf(skipped)) >= 4 && len(c.deliveredOf(retried)) >= 6 }, "the replays are delivered")
		c.settle()
		c.requireDelivered(skipped, []outbox.Event{sk[0], sk[2], sk[0], sk[2]}, []bool{false, false, true, true},
			"a replay delivers the order's events again, marked as replays and in sequence, never a skipped one")
		c.requireDelivered(retried, append(slices.Clone(r), r...), []bool{false, false, false, true, true, true},
			"a replay delivers the order's events again, marked as replays and in sequence")
	})
	t.Run("replay of a window without an order", func(t *testing.T) {
		c := c.on(t)
		window := outboxops.ReplayOptions{From: c.start, To: time.Now().Add(time.Minute), AggregateType: aggregateType}
		// The named replays' holds (the log's) end at their worker's next
		// step: a window replay leaves a held order out, so wait for none.
		c.waitFor(func() bool {
			p, err := outboxops.PlanReplay(c.ctx, c.pool, window)
			require.NoError(t, err)
			return p.Log.HeldOrders == 0
		}, "no order under a replay's hold")
		require.EqualValues(t, 5, c.replay(window),
			"a window replay counts every order's delivered events in the window, on every source, never a skipped one")
		c.waitFor(func() bool { return len(c.deliveredOf(skipped)) >= 6 && len(c.deliveredOf(retried)) >= 9 }, "the window's replay is delivered")
		c.settle()
		c.requireDelivered(skipped, []outbox.Event{sk[0], sk[2], sk[0], sk[2], sk[0], sk[2]}, []bool{false, false, true, true, true, true},
			"a window replay delivers each order's events again, in sequence, never a skipped one")
		c.requireDelivered(retried, slices.Concat(r, r, r), []bool{false, false, false, true, true, true, true, true, true},
			"a window replay delivers each order's events again, in sequence")
	})
}

// switches: from the source to each other and back while producers write;
// nothing lost, first deliveries in sequence.
func (s Source) switches(t *testing.T) {
	c := s.newCase(t)
	for i := range 2 {
		c.relay(fmt.Sprintf("relay-%d", i), c.rec, c.pool)
	}
	var path []string
	for _, other := range []string{outboxops.SourcePoll, outboxops.SourceCDC, outboxops.SourceLog} {
		if other != s.Name {
			path = append(path, other, s.Name)
		}
	}
	orders := c.orders(10)
	pctx, stop := context.WithCancel(c.ctx)
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; pctx.Err() == nil; i++ {
				c.enqueue(orders[(p*5+i)%len(orders)], 1+i%2)
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	// Each leg lasts until the events written since the switch are
	// delivered: the relays followed it.
	leg := func(source string) {
		n := len(c.written()) + 6
		c.waitFor(func() bool { return len(c.written()) >= n }, "the producers write")
		c.waitDelivered(c.written()[:n])
		t.Logf("%s: %d events delivered", source, n)
	}
	leg(s.Name)
	for _, to := range path {
		_, err := outboxops.SetSource(c.ctx, c.pool, to, "sourcetest", "switch case: "+strings.Join(path, " → "))
		require.NoError(t, err, "switch to %s", to)
		leg(to)
	}
	stop()
	wg.Wait()
	c.waitDelivered(c.written())
	c.requireFirstInSequence()
	t.Logf("%s: %d events, %d deliveries", strings.Join(append([]string{s.Name}, path...), " → "), len(c.written()), len(c.rec.Events()))
}

// longTransaction: a producer's transaction stays open, its event written
// first, while other producers commit theirs, one of them an order of the
// same log partition (on the log source; any order elsewhere); the relays
// may make the others wait (the log reads up to the oldest open
// transaction), never lose the open one's event when it commits last.
func (s Source) longTransaction(t *testing.T) {
	c := s.newCase(t)
	orders := c.orders(20) // more than the log's 16 partitions: two share one
	for _, o := range orders {
		c.enqueue(o, 1)
	}
	c.relay("relay-0", c.rec, c.pool)
	c.relay("relay-1", c.rec, c.pool)
	c.waitDelivered(c.written())
	late := orders[0]
	byPartition := map[int]string{}
	for _, e := range c.written() {
		l, err := outboxops.LogEventByID(c.ctx, c.pool, e.ID)
		if errors.Is(err, outbox.ErrEventNotFound) {
			break // not in the log: no partitions
		}
		require.NoError(t, err)
		if o, ok := byPartition[l.Partition]; ok {
			late = o
			break
		}
		byPartition[l.Partition] = e.AggregateID
	}
	others := slices.DeleteFunc(slices.Clone(orders), func(o string) bool { return o == late })

	long, err := c.pool.Begin(c.ctx)
	require.NoError(t, err)
	defer func() { _ = long.Rollback(context.WithoutCancel(c.ctx)) }()
	lateEvs, err := outbox.Enqueue(c.ctx, long, c.prepare(late, 1)...)
	require.NoError(t, err, "the long transaction writes its event before the others")
	for round := range 3 {
		for i, o := range others {
			c.enqueue(o, 1+(i+round)%2)
		}
		time.Sleep(300 * time.Millisecond) // the relays read meanwhile
	}
	require.NoError(t, long.Commit(c.ctx))
	c.mu.Lock()
	c.enqueued = append(c.enqueued, lateEvs...)
	c.mu.Unlock()
	c.waitDelivered(c.written())
	c.requireFirstInSequence()
}

// retentionRacingReplay: retention with a tiny retention runs while replays
// are requested; each replay is refused or whole.
func (s Source) retentionRacingReplay(t *testing.T) {
	c := s.newCase(t)
	require.NoError(t, outboxops.RecordReplayHorizon(c.ctx, c.pool, time.Hour, "sourcetest"))
	c.relay("relay-0", c.rec, c.pool)
	orders := c.orders(6)
	for _, o := range orders {
		c.enqueue(o, 3)
	}
	c.waitDelivered(c.written())
	time.Sleep(50 * time.Millisecond) // older than the retention below

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted = map[string]int64{} // order → events a replay accepted
		refusals []error
		retained error // what retention returned, checked once it ended
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 3 {
			if _, err := outboxops.Cleanup(c.ctx, c.pool, outboxops.CleanupOptions{Retention: time.Millisecond, BatchSize: 1}); err != nil {
				retained = fmt.Errorf("retention cleanup: %w", err)
				return
			}
			if _, err := outboxops.RetainLog(c.ctx, c.pool, outboxops.LogRetentionOptions{Retention: time.Millisecond}); err != nil {
				retained = fmt.Errorf("log retention: %w", err)
				return
			}
		}
	}()
	for _, o := range orders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := c.tryReplay(outboxops.ReplayOptions{From: c.start, To: time.Now().Add(time.Minute), AggregateType: aggregateType, AggregateID: o})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refusals = append(refusals, err)
				return
			}
			accepted[o] = n
		}()
	}
	wg.Wait()
	require.NoError(t, retained)
	for o, n := range accepted {
		require.EqualValues(t, 3, n, "order %s: a replay racing retention replays its whole window (3 events) or is refused, never part of it", o)
	}
	for _, err := range refusals {
		require.True(t, errors.Is(err, outboxops.ErrReplayWindow) || errors.Is(err, outboxops.ErrLogRangeRetiring),
			"a replay is refused because retention reached its window (outboxops.ErrReplayWindow, outboxops.ErrLogRangeRetiring), not for another reason: %v", err)
	}
	c.waitFor(func() bool {
		for o, n := range accepted {
			if int64(len(c.deliveredOf(o))) < 3+n {
				return false
			}
		}
		return true
	}, "the accepted replays are delivered")
	c.settle()
	for o, n := range accepted {
		got := c.deliveredOf(o)
		require.Len(t, got, int(3+n), "order %s: its 3 events, and as many again as its replay accepted", o)
		for i, e := range got[3:] {
			require.True(t, e.Replay, "order %s: delivery %d after the first three is a replay", o, i+4)
			require.EqualValues(t, i+1, e.Sequence, "order %s: a replay delivers the whole window, in sequence", o)
		}
	}
	t.Logf("%d replays accepted whole, %d refused (%v)", len(accepted), len(refusals), errors.Join(refusals...))
}
