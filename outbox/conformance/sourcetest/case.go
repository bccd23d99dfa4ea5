package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
)

// aggregateType is the aggregate type of every event the suite writes.
const aggregateType = "sourcetest"

// settleFor is how long a case waits before it asserts that something did
// not happen (an event a quarantine holds back, a skipped one): longer than
// the relays' poll interval and the cdc sweeper's grace.
const settleFor = 800 * time.Millisecond

// caseState is one case's database, sink and what its producers wrote.
type caseState struct {
	s     Source
	ctx   context.Context
	pool  *pgxpool.Pool
	rec   *outboxtest.Recorder
	slot  string
	start time.Time

	mu       sync.Mutex
	enqueued []outbox.Event
	refused  map[uuid.UUID]bool
	orderN   int
}

// tcase is a case's state seen from one (sub)test.
type tcase struct {
	t *testing.T
	*caseState
}

// newCase gives t a fresh database whose recorded source is s's, and a
// recorder that refuses the events the case names (refuse) for good.
func (s Source) newCase(t *testing.T) *tcase {
	t.Helper()
	pool := s.DB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	_, err := outboxops.SetSource(ctx, pool, s.Name, "sourcetest", "conformance case "+t.Name())
	require.NoError(t, err, "record the source %s", s.Name)
	c := &tcase{t: t, caseState: &caseState{
		s: s, ctx: ctx, pool: pool, rec: &outboxtest.Recorder{DB: pool},
		slot:    "sourcetest_" + strings.ReplaceAll(uuid.NewString()[:8], "-", ""),
		start:   time.Now().Add(-time.Minute),
		refused: map[uuid.UUID]bool{},
	}}
	c.rec.Answer = func(_ context.Context, e outbox.Event) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.refused[e.ID] {
			return outbox.Permanent(errors.New("sourcetest: the sink can never take this event"))
		}
		return nil
	}
	return c
}

// on is c seen from the subtest t.
func (c *tcase) on(t *testing.T) *tcase { return &tcase{t: t, caseState: c.caseState} }

// config is the relays' configuration in every case: short intervals, so
// each case takes seconds.
func (c *tcase) config(owner string) outbox.RelayConfig {
	return outbox.RelayConfig{
		Owner: owner, Logger: c.s.Logger, Lease: lease,
		PollInterval: 50 * time.Millisecond, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		MaxAttempts: 3, MarkDelay: 5 * time.Millisecond,
		CDCSlot: c.slot, CDCGrace: 200 * time.Millisecond,
	}
}

// relay runs a relay of the recorded source over pool, publishing to pub,
// until the test ends.
func (c *tcase) relay(owner string, pub outbox.Publisher, pool *pgxpool.Pool) (stop func()) {
	c.t.Helper()
	r, err := outbox.NewRelay(pool, pub, c.config(owner))
	require.NoError(c.t, err, "build relay %s", owner)
	return outboxtest.Run(c.t, r)
}

// dyingRelay is a relay that dies when its publisher says so: its context
// ends and its pool is closed and its connections ended at once, so that
// it can write nothing more, as its process would had it been killed.
type dyingRelay struct {
	c    *tcase
	name string
	pool *pgxpool.Pool
	app  string
	ctx  context.Context
	stop context.CancelFunc
	pub  func(ctx context.Context, e outbox.Event) error

	once   sync.Once
	dead   chan struct{} // closed when Run returned
	closed chan struct{} // closed when the pool is
}

// dyingRelay returns a relay called owner on a pool of its own; set pub,
// then start it.
func (c *tcase) dyingRelay(owner string) *dyingRelay {
	c.t.Helper()
	app := "sourcetest_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	url := c.pool.Config().ConnString()
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	cfg, err := pgxpool.ParseConfig(url + sep + "application_name=" + app)
	require.NoError(c.t, err)
	pool, err := pgxpool.NewWithConfig(c.ctx, cfg)
	require.NoError(c.t, err)
	ctx, stop := context.WithCancel(context.Background())
	d := &dyingRelay{c: c, name: owner, pool: pool, app: app, ctx: ctx, stop: stop, dead: make(chan struct{}), closed: make(chan struct{})}
	c.t.Cleanup(func() {
		d.die()
		select {
		case <-d.dead:
		case <-time.After(30 * time.Second):
			c.t.Errorf("sourcetest: the dying relay %s did not stop", owner)
		}
		<-d.closed
	})
	return d
}

func (d *dyingRelay) start() {
	r, err := outbox.NewRelay(d.pool, outbox.PublisherFunc(d.pub), d.c.config(d.name))
	require.NoError(d.c.t, err)
	go func() {
		defer close(d.dead)
		if err := r.Run(d.ctx); err != nil {
			d.c.t.Logf("sourcetest: the dying relay %s stopped: %v", d.name, err)
		}
	}()
}

// die ends the relay at once: its context, its pool (no new connection)
// and its connections (the ones it holds).
func (d *dyingRelay) die() {
	d.once.Do(func() {
		d.stop()
		go func() {
			d.pool.Close()
			close(d.closed)
		}()
		time.Sleep(50 * time.Millisecond) // the pool refuses new connections
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := qEndConnections.Exec(ctx, d.c.pool, endConnectionsArgs{ApplicationName: d.app})
		if err != nil {
			d.c.t.Errorf("sourcetest: end the dying relay's connections: %v", err)
		}
	})
}

// waitDead waits until the relay's Run returned.
func (d *dyingRelay) waitDead() {
	d.c.t.Helper()
	select {
	case <-d.dead:
	case <-time.After(d.c.s.Timeout):
		require.FailNow(d.c.t, fmt.Sprintf("sourcetest: the relay %s never reached the point where it dies (no event published to it?)", d.name))
	}
}

// order returns a fresh order's ID.
func (c *tcase) order() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.orderN++
	return fmt.Sprintf("o-%03d", c.orderN)
}

func (c *tcase) orders(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = c.order()
	}
	return out
}

// prepare returns n events of order with their IDs, not yet enqueued.
func (c *tcase) prepare(order string, n int) []outbox.Event {
	c.t.Helper()
	evs := make([]outbox.Event, n)
	for i := range evs {
		e, err := outbox.NewEvent(aggregateType, order, "Touched", 1, map[string]int{"n": i})
		require.NoError(c.t, err)
		e.ID = uuid.Must(uuid.NewV7())
		evs[i] = e
	}
	return evs
}

// enqueueEvents enqueues evs in one transaction with the producers' plain
// outbox.Enqueue and returns them as enqueued.
func (c *tcase) enqueueEvents(evs ...outbox.Event) []outbox.Event {
	c.t.Helper()
	var out []outbox.Event
	err := pgx.BeginFunc(c.ctx, c.pool, func(tx pgx.Tx) error {
		var err error
		out, err = outbox.Enqueue(c.ctx, tx, evs...)
		return err
	})
	require.NoError(c.t, err, "enqueue")
	c.mu.Lock()
	c.enqueued = append(c.enqueued, out...)
	c.mu.Unlock()
	return out
}

// enqueue enqueues n events of order in one transaction.
func (c *tcase) enqueue(order string, n int) []outbox.Event {
	c.t.Helper()
	return c.enqueueEvents(c.prepare(order, n)...)
}

// written is every event the case enqueued.
func (c *tcase) written() []outbox.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]outbox.Event(nil), c.enqueued...)
}

// refuse makes the sink refuse the events ids for good; cure takes it back.
func (c *tcase) refuse(ids ...uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.refused[id] = true
	}
}

func (c *tcase) cure(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.refused, id)
}

// deliveries is how often the sink acknowledged the event id.
func (c *tcase) deliveries(id uuid.UUID) int {
	n := 0
	for _, e := range c.rec.Events() {
		if e.ID == id {
			n++
		}
	}
	return n
}

// deliveredOf is what the sink acknowledged of order, in order.
func (c *tcase) deliveredOf(order string) []outbox.Event {
	var out []outbox.Event
	for _, e := range c.rec.Events() {
		if e.AggregateID == order {
			out = append(out, e)
		}
	}
	return out
}

// waitFor polls cond until it holds, failing the test with what once the
// case's timeout passed.
func (c *tcase) waitFor(cond func() bool, what string) {
	c.t.Helper()
	deadline := time.Now().Add(c.s.Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNow(c.t, fmt.Sprintf("sourcetest: not within %s: %s", c.s.Timeout, what))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// streaming waits, on the cdc source, until a relay streams the case's
// slot: the events enqueued after it reach the stream, not only the
// sweeper's backfill, so a case sees the stream's own handling of a
// failure. A no-op on the other sources.
func (c *tcase) streaming() {
	c.t.Helper()
	if c.s.Name != "cdc" {
		return
	}
	c.waitFor(func() bool {
		slot, ok, err := outboxops.Slot(c.ctx, c.pool, c.slot)
		return err == nil && ok && slot.Active
	}, "a cdc relay streams slot "+c.slot)
}

// waitDelivered waits until every event of evs was acknowledged at least
// once; it fails naming the ones that were not, with their states.
func (c *tcase) waitDelivered(evs []outbox.Event) {
	c.t.Helper()
	missing := func() []outbox.Event {
		seen := map[uuid.UUID]bool{}
		for _, e := range c.rec.Events() {
			seen[e.ID] = true
		}
		var out []outbox.Event
		for _, e := range evs {
			if !seen[e.ID] {
				out = append(out, e)
			}
		}
		return out
	}
	deadline := time.Now().Add(c.s.Timeout)
	for {
		m := missing()
		if len(m) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var lines []string
			for i, e := range m {
				if i == 10 {
					lines = append(lines, fmt.Sprintf("  ... and %d more", len(m)-10))
					break
				}
				lines = append(lines, fmt.Sprintf("  %s/%s #%d %s: %s", e.AggregateType, e.AggregateID, e.Sequence, e.ID, c.state(e)))
			}
			held, err := outboxtest.Holders(context.WithoutCancel(c.ctx), c.pool)
			if err != nil {
				held = "unknown: " + err.Error()
			}
			require.FailNow(c.t, fmt.Sprintf("sourcetest: %d of %d events never delivered within %s:\n%s\noutbox_events holds: %s",
				len(m), len(evs), c.s.Timeout, strings.Join(lines, "\n"), held))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settle waits for what must not happen to have had the time to.
func (c *tcase) settle() { time.Sleep(settleFor) }

// requireFirstInSequence requires that each order's events were first
// delivered in sequence, and never first as a replay.
func (c *tcase) requireFirstInSequence() {
	c.t.Helper()
	seen := map[uuid.UUID]bool{}
	last := map[string]int64{}
	for i, e := range c.rec.Events() {
		if seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		require.False(c.t, e.Replay, "delivery %d: event %s/#%d is first delivered as a replay", i+1, e.AggregateID, e.Sequence)
		require.Greater(c.t, e.Sequence, last[e.AggregateID],
			"delivery %d: order %s's event #%d first delivered after its #%d: an order's events are first delivered in sequence",
			i+1, e.AggregateID, e.Sequence, last[e.AggregateID])
		last[e.AggregateID] = e.Sequence
	}
}

// requireDelivered requires the sink acknowledged exactly want of order, in
// that order, and replays says which of them were replays (nil: none).
func (c *tcase) requireDelivered(order string, want []outbox.Event, replays []bool, what string) {
	c.t.Helper()
	if replays == nil {
		replays = make([]bool, len(want))
	}
	describe := func(evs []outbox.Event, replay func(int) bool) []string {
		out := make([]string, len(evs))
		for i, e := range evs {
			out[i] = e.ID.String()
			if replay(i) {
				out[i] += " (replay)"
			}
		}
		return out
	}
	got := c.deliveredOf(order)
	require.Equal(c.t,
		describe(want, func(i int) bool { return replays[i] }),
		describe(got, func(i int) bool { return got[i].Replay }),
		"order %s: %s", order, what)
}

// state is where event e is in its life, on whichever table holds it.
func (c *tcase) state(e outbox.Event) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), 10*time.Second)
	defer cancel()
	infos, err := outboxops.List(ctx, c.pool, outboxops.ListOptions{AggregateType: e.AggregateType, AggregateID: e.AggregateID, Limit: 10000})
	if err != nil {
		return "unknown: " + err.Error()
	}
	for _, i := range infos {
		if i.ID == e.ID {
			s := string(i.State)
			if i.ClaimedBy != "" && i.ClaimUntil != nil {
				s += fmt.Sprintf(" (claimed by relay %s, lease until %s)", i.ClaimedBy, i.ClaimUntil.Format(time.RFC3339Nano))
			}
			if i.LastError != "" {
				s += " (" + i.LastError + ")"
			}
			return s
		}
	}
	l, err := outboxops.LogEventByID(ctx, c.pool, e.ID)
	if err != nil {
		return "unknown: " + err.Error()
	}
	s := fmt.Sprintf("%s (log, partition %d)", l.State(), l.Partition)
	if l.LastError != "" {
		s += " (" + l.LastError + ")"
	}
	return s
}

// waitQuarantined waits until e is quarantined.
func (c *tcase) waitQuarantined(e outbox.Event) {
	c.t.Helper()
	var last string
	deadline := time.Now().Add(c.s.Timeout)
	for {
		last = c.state(e)
		if strings.HasPrefix(last, "quarantined") {
			return
		}
		if time.Now().After(deadline) {
			require.FailNow(c.t, fmt.Sprintf("sourcetest: event %s/%s (%s) not quarantined within %s; it is %s",
				e.AggregateID, e.Type, e.ID, c.s.Timeout, last))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// quarantined is what the operator's quarantine listing
// (outboxops.ListAll with Quarantined) names, by event ID: outbox_events'
// quarantined events and the heads of the log's quarantined holds.
func (c *tcase) quarantined() []uuid.UUID {
	c.t.Helper()
	l, err := outboxops.ListAll(c.ctx, c.pool, outboxops.ListOptions{Quarantined: true, AggregateType: aggregateType, Limit: 10000})
	require.NoError(c.t, err, "list the quarantined events")
	var out []uuid.UUID
	for _, e := range l.Events {
		out = append(out, e.ID)
	}
	for _, h := range l.LogHolds {
		if h.EventID != nil {
			out = append(out, *h.EventID)
		}
	}
	return out
}

// retry is the operator's retry of e (outboxops.Retry), on whichever table
// holds it.
func (c *tcase) retry(e outbox.Event) {
	c.t.Helper()
	_, err := outboxops.Retry(c.ctx, c.pool, e.ID)
	require.NoError(c.t, err, "retry %s", e.ID)
}

// skip is the operator's skip of e (outboxops.Skip), on whichever table
// holds it.
func (c *tcase) skip(e outbox.Event) {
	c.t.Helper()
	_, err := outboxops.Skip(c.ctx, c.pool, e.ID, "sourcetest: refunded by hand", "sourcetest")
	require.NoError(c.t, err, "skip %s", e.ID)
}

// tryReplay is the operator's replay of the window (outboxops.Replay), on
// whichever table holds its events; it returns how many events it replayed.
func (c *tcase) tryReplay(opts outboxops.ReplayOptions) (int64, error) {
	return outboxops.Replay(c.ctx, c.pool, opts)
}

func (c *tcase) replay(opts outboxops.ReplayOptions) int64 {
	c.t.Helper()
	n, err := c.tryReplay(opts)
	require.NoError(c.t, err, "replay %s/%s", opts.AggregateType, opts.AggregateID)
	return n
}
