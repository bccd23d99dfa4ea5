package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// sink is a publisher over a downstream that can be down: while down every
// publish fails for the sink's fault (as temporalpub reports Temporal's
// Unavailable) and Probe fails; while up it answers with answer (nil:
// acknowledge). A relay probes it only when probing is set.
type sink struct {
	down    atomic.Bool
	probing bool
	probes  atomic.Int64
	answer  func(e outbox.Event) error
	lanes   *laneChecker
	mu      sync.Mutex
	acked   map[uuid.UUID]int
}

func newSink(probing bool, answer func(e outbox.Event) error) *sink {
	return &sink{probing: probing, answer: answer, lanes: newLaneChecker(), acked: map[uuid.UUID]int{}}
}

var errUnreachable = errors.New("connection refused")

func (s *sink) Publish(ctx context.Context, e outbox.Event) error {
	s.lanes.enter(e)
	var err error
	switch {
	case s.down.Load():
		err = outbox.SinkUnavailable(errUnreachable)
	case s.answer != nil:
		err = s.answer(e)
	}
	s.lanes.leave(e, err == nil)
	if err == nil {
		s.mu.Lock()
		s.acked[e.ID]++
		s.mu.Unlock()
	}
	return err
}

// probingSink is a sink that is also an outbox.Prober.
type probingSink struct{ *sink }

func (s probingSink) Probe(ctx context.Context) error {
	s.probes.Add(1)
	if s.down.Load() {
		return errUnreachable
	}
	return nil
}

func (s *sink) publisher() outbox.Publisher {
	if s.probing {
		return probingSink{s}
	}
	return s
}

func (s *sink) ackedOnce(ids ...uuid.UUID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if s.acked[id] == 0 {
			return false
		}
	}
	return true
}

func TestClassifyWhoseFaultAPublishErrorIs(t *testing.T) {
	t.Parallel()
	netErr := &net.OpError{Op: "dial", Net: "tcp", Err: errUnreachable}
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("boom"), "event"},
		{outbox.Permanent(errors.New("no route")), "event"},
		{outbox.Permanent(outbox.SinkUnavailable(errors.New("odd"))), "event"},
		{outbox.SinkUnavailable(errors.New("unavailable")), "sink"},
		{fmt.Errorf("start: %w", outbox.SinkUnavailable(errUnreachable)), "sink"},
		{outbox.Throttled(errors.New("resource exhausted")), "throttle"},
		{context.DeadlineExceeded, "sink"},
		{fmt.Errorf("publish: %w", context.Canceled), "sink"},
		{netErr, "sink"},
		// PostgreSQL failing under a publish (the codec's key look-up) is
		// not the event's fault; a statement the server refuses is.
		{fmt.Errorf("codec: read a customer key: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}), "sink"},
		{fmt.Errorf("codec: read a customer key: %w", &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}), "sink"},
		{fmt.Errorf("codec: %w", &pgconn.PgError{Code: "53300", Message: "too many clients already"}), "sink"},
		{fmt.Errorf("codec: %w", &pgconn.PgError{Code: "08006", Message: "connection failure"}), "sink"},
		{fmt.Errorf("codec: %w", &pgconn.PgError{Code: "42P01", Message: `relation "customer_keys" does not exist`}), "event"},
		{fmt.Errorf("codec: %w", &pgconn.PgError{Code: "23505", Message: "duplicate key"}), "event"},
	} {
		require.Equal(t, c.want, outbox.Fault(c.err), "%v", c.err)
	}
	require.Empty(t, outbox.Fault(nil), "no error, no fault")
	require.ErrorIs(t, outbox.Throttled(errors.New("x")), outbox.ErrSinkUnavailable, "a throttle is the sink's fault too")
}

// TestSinkOutageCostsNoAttempts: the sink is down for longer than the whole
// backoff schedule of MaxAttempts. The breaker opens, the relay stops
// claiming and probes; once the sink answers every healthy event is
// published in per-order order with its attempts unused and nothing
// quarantined, while a poison event placed during the outage is still
// quarantined: its own fault. With a Prober and without (probing by
// publishing), polling and cdc.
func TestSinkOutageCostsNoAttempts(t *testing.T) {
	t.Parallel()
	for _, source := range []string{"poll", "cdc"} {
		for _, probing := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/probe=%v", source, probing), func(t *testing.T) {
				t.Parallel()
				s := newSink(probing, func(e outbox.Event) error {
					if e.Type == "Poison" {
						return outbox.Permanent(errors.New("no workflow for Poison"))
					}
					return nil
				})
				s.down.Store(true)
				reg := prometheus.NewRegistry()
				cfg := outbox.RelayConfig{
					Registerer: reg, MaxAttempts: 2, RetryBase: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond,
					BreakerThreshold: 3, ProbeBase: 20 * time.Millisecond, ProbeMax: 50 * time.Millisecond,
					PollInterval: 50 * time.Millisecond, Logger: quietLogger(),
				}
				var pool *pgxpool.Pool
				if source == "cdc" {
					b := setupCDC(t, nil)
					pool = b.pool
					r, err := outbox.NewCDCRelay(pool, s.publisher(), outbox.CDCConfig{RelayConfig: cfg, Slot: testSlot(t),
						Grace: 200 * time.Millisecond, StatusInterval: 50 * time.Millisecond, StandbyRetry: 100 * time.Millisecond})
					require.NoError(t, err)
					run(t, r)
					waitStreaming(t, pool, r)
				} else {
					b := setup(t, nil)
					pool = b.pool
					r, err := outbox.NewPollRelay(pool, s.publisher(), cfg)
					require.NoError(t, err)
					run(t, r)
				}

				var healthy []uuid.UUID
				for o := range 5 {
					for _, typ := range []string{"Created", "Cancelled"} {
						healthy = append(healthy, ids(testdb.Enqueue(t, pool, testdb.Event(t, fmt.Sprintf("o-%d", o), typ)))...)
					}
				}
				poison := testdb.Enqueue(t, pool, testdb.Event(t, "p", "Poison"))[0]
				eventually(t, 20*time.Second, func() bool {
					up, err := promtest.Sum(reg, "outbox_sink_up")
					return err == nil && up == 0
				}, "the breaker opens")
				// Longer than MaxAttempts' whole backoff schedule (tens of
				// milliseconds): several probes, or several rounds of
				// publishing, go by.
				eventually(t, 20*time.Second, func() bool {
					if probing {
						return s.probes.Load() >= 5
					}
					return promtest.Value(t, reg, "outbox_publish_errors_total") >= 12
				}, "the relay keeps probing the sink while it is down")
				// The operator's status shows the open breaker, by relay.
				status, err := outboxops.Status(context.Background(), pool)
				require.NoError(t, err)
				require.Len(t, status.SinkBreakers, 1, "the open breaker is in the status")
				require.False(t, status.SinkBreakers[0].Stale)
				require.Contains(t, status.SinkBreakers[0].LastError, errUnreachable.Error())
				for _, id := range append(healthy, poison.ID) {
					row := readRow(t, pool, id)
					require.Nil(t, row.Quarantined, "event %s quarantined for the sink's outage", id)
					// Without a Prober the relay probes by publishing: an event
					// may be claimed right now (one attempt, under a lease).
					if row.ClaimUntil == nil {
						require.Zero(t, row.Attempts, "event %s used attempts while the sink was down", id)
					}
				}

				require.Equal(t, promtest.Value(t, reg, "outbox_publish_errors_total"),
					promtest.Value(t, reg, "outbox_publish_errors_total", "fault", "sink"), "an outage's errors are the sink's fault")
				s.down.Store(false)
				eventually(t, 30*time.Second, func() bool { return published(pool, healthy...) }, "every healthy event published once the sink is back")
				eventually(t, 10*time.Second, func() bool { return quarantined(pool, poison.ID) }, "the poison event is still quarantined: its own fault")
				for _, id := range healthy {
					row := readRow(t, pool, id)
					require.Nil(t, row.Quarantined)
					require.LessOrEqual(t, row.Attempts, 1, "event %s", id)
				}
				require.True(t, s.ackedOnce(healthy...))
				up := promtest.Value(t, reg, "outbox_sink_up")
				require.Equal(t, 1.0, up)
				status, err = outboxops.Status(context.Background(), pool)
				require.NoError(t, err)
				require.Empty(t, status.SinkBreakers, "the closed breaker left the status")
				s.lanes.mu.Lock()
				defer s.lanes.mu.Unlock()
				require.Empty(t, s.lanes.errs)
			})
		}
	}
}

// TestThrottledSinkSlowsTheRelay: a sink that throttles every publish
// beyond three at once. Nothing is quarantined or loses an attempt, the
// throttles are counted, and the relay settles under the sink's limit.
func TestThrottledSinkSlowsTheRelay(t *testing.T) {
	t.Parallel()
	var inFlight, throttles atomic.Int64
	s := newSink(true, func(e outbox.Event) error {
		defer inFlight.Add(-1)
		if inFlight.Add(1) > 3 {
			throttles.Add(1)
			return outbox.Throttled(errors.New("namespace rate limit exceeded"))
		}
		time.Sleep(2 * time.Millisecond)
		return nil
	})
	b := setup(t, nil)
	reg := prometheus.NewRegistry()
	r, err := outbox.NewPollRelay(b.pool, s.publisher(), outbox.RelayConfig{
		Registerer: reg, MaxAttempts: 1, MaxInFlight: 16, PollInterval: 50 * time.Millisecond, Logger: quietLogger()})
	require.NoError(t, err)
	var all []uuid.UUID
	for o := range 200 {
		all = append(all, ids(testdb.Enqueue(t, b.pool, testdb.Event(t, fmt.Sprintf("t-%d", o), "Created")))...)
	}
	run(t, r)
	eventually(t, 60*time.Second, func() bool { return published(b.pool, all...) }, "every event published")
	for _, id := range all {
		require.Nil(t, readRow(t, b.pool, id).Quarantined, "a throttle quarantined %s", id)
	}
	require.Positive(t, throttles.Load(), "the sink throttled")
	require.Equal(t, float64(throttles.Load()), promtest.Value(t, reg, "outbox_sink_throttled_total"))
	up := promtest.Value(t, reg, "outbox_sink_up")
	require.Equal(t, 1.0, up, "a throttle does not open the breaker")
}

// TestRateCeiling: Rate caps the starts a second.
func TestRateCeiling(t *testing.T) {
	t.Parallel()
	var starts []time.Time
	var mu sync.Mutex
	b := setup(t, func(ctx context.Context, e outbox.Event) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return nil
	})
	var all []uuid.UUID
	for o := range 60 {
		all = append(all, ids(testdb.Enqueue(t, b.pool, testdb.Event(t, fmt.Sprintf("r-%d", o), "Created")))...)
	}
	r := b.newRelay(t, outbox.RelayConfig{Rate: 40, MaxInFlight: 16})
	run(t, r)
	eventually(t, 30*time.Second, func() bool { return published(b.pool, all...) }, "every event published")
	mu.Lock()
	defer mu.Unlock()
	// A burst of one second's worth (40), then 40 a second: the last of 60
	// starts no sooner than about half a second after the first.
	span := starts[len(starts)-1].Sub(starts[0])
	require.GreaterOrEqual(t, span, 400*time.Millisecond, "60 starts at 40/s took only %s", span)
}

// TestDatabaseFailingUnderAPublishCostsNoAttempt: a publisher that reads
// PostgreSQL while it publishes (temporalpub's payload codec fetches the
// customer's key from customer_keys) has its backend terminated under it,
// as a failover, a restart or an idle-killer does. With MaxAttempts 1 the
// event would be quarantined at the first failure if that were its fault;
// it is not: the attempt is given back and the event is published once the
// database answers again.
func TestDatabaseFailingUnderAPublishCostsNoAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var terminations atomic.Int64
	s := newSink(false, func(e outbox.Event) error {
		if terminations.Load() >= 3 {
			return nil
		}
		terminations.Add(1)
		// The server ends the connection with 57P01, as for every backend
		// pg_terminate_backend or a shutdown reaches.
		var ok bool
		err := b.pool.QueryRow(context.Background(), `SELECT pg_terminate_backend(pg_backend_pid())`).Scan(&ok)
		if err == nil {
			// Not the database's failure: counted as the event's, which
			// quarantines it under MaxAttempts 1 and fails the test.
			return errors.New("pg_terminate_backend left the connection alive")
		}
		return fmt.Errorf("codec: read a customer key: %w", err)
	})
	reg := prometheus.NewRegistry()
	r, err := outbox.NewPollRelay(b.pool, s.publisher(), outbox.RelayConfig{
		Registerer: reg, MaxAttempts: 1, RetryBase: 10 * time.Millisecond, RetryMax: 20 * time.Millisecond,
		ProbeBase: 10 * time.Millisecond, ProbeMax: 20 * time.Millisecond, PollInterval: 50 * time.Millisecond, Logger: quietLogger(),
	})
	require.NoError(t, err)
	run(t, r)
	e := testdb.Enqueue(t, b.pool, testdb.Event(t, "o-1", "Created"))[0]
	eventually(t, 30*time.Second, func() bool { return published(b.pool, e.ID) }, "the event is published once the database answers")
	row := readRow(t, b.pool, e.ID)
	require.Nil(t, row.Quarantined, "quarantined for the database's failure")
	require.Equal(t, 1, row.Attempts, "the database's failures cost the event no attempt: only the publish that succeeded counts")
	require.EqualValues(t, 3, promtest.Value(t, reg, "outbox_publish_errors_total", "fault", "sink"))
	require.Zero(t, promtest.Value(t, reg, "outbox_publish_errors_total", "fault", "event"))
}

// busyProducer enqueues an event for a new order every 10ms, through q (nil:
// outbox_events), until the test ends: a sink that answers other
// publishes all along. It returns the events enqueued so far.
func busyProducer(t *testing.T, pool *pgxpool.Pool, q *outbox.Enqueuer) func() []uuid.UUID {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu  sync.Mutex
		all []uuid.UUID
		wg  sync.WaitGroup
	)
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			var out []outbox.Event
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				var err error
				out, err = q.Enqueue(ctx, tx, testdb.Event(t, fmt.Sprintf("busy-%d", i), "Created"))
				return err
			})
			if err == nil {
				mu.Lock()
				all = append(all, out[0].ID)
				mu.Unlock()
			}
			sleepCtx(ctx, 10*time.Millisecond)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return func() []uuid.UUID {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(all)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}

// hangs answers a publish as a client whose call for this one event never
// returns: it waits out the relay's deadline and reports the sink's fault,
// as temporalpub reports DeadlineExceeded.
func hangs(ctx context.Context) error {
	<-ctx.Done()
	return outbox.SinkUnavailable(ctx.Err())
}

// TestHungPublishIsTheEventsFault: the publish of one event always runs
// past PublishTimeout while the sink acknowledges the other publishes of
// the relay meanwhile (a steady stream of other orders). The sink is not
// down: the timeout is the event's own fault, its attempts count, and it is
// quarantined after MaxAttempts; its order's later event waits, every
// other order flows, the breaker stays closed.
func TestHungPublishIsTheEventsFault(t *testing.T) {
	t.Parallel()
	var hung sync.Map
	b := setup(t, func(ctx context.Context, e outbox.Event) error {
		if _, ok := hung.Load(e.ID); ok {
			return hangs(ctx)
		}
		return nil
	})
	reg := prometheus.NewRegistry()
	r := b.newRelay(t, outbox.RelayConfig{
		Registerer: reg, Lease: 2 * time.Second, PublishTimeout: 200 * time.Millisecond, MaxAttempts: 3,
		RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, PollInterval: 50 * time.Millisecond,
	})
	h := testdb.Enqueue(t, b.pool, testdb.Event(t, "hung", "Created"), testdb.Event(t, "hung", "Cancelled"))
	hung.Store(h[0].ID, true)
	busy := busyProducer(t, b.pool, nil)
	run(t, r)

	eventually(t, 30*time.Second, func() bool { return quarantined(b.pool, h[0].ID) },
		"the hung event is quarantined (%v)", stringer(func() string {
			row := readRow(t, b.pool, h[0].ID)
			if row.LastError == nil {
				return fmt.Sprintf("%d attempts", row.Attempts)
			}
			return fmt.Sprintf("%d attempts, last error %q", row.Attempts, *row.LastError)
		}))
	row := readRow(t, b.pool, h[0].ID)
	require.Equal(t, 3, row.Attempts, "quarantined after MaxAttempts, not at once")
	require.Contains(t, *row.LastError, "ran out of time again while the sink acknowledged other publishes")
	require.Nil(t, readRow(t, b.pool, h[1].ID).PublishedAt, "its order's later event waits")
	require.Zero(t, b.rec.callsFor(h[1].ID))
	sofar := busy()
	eventually(t, 30*time.Second, func() bool { return published(b.pool, sofar...) }, "the other orders flow")
	require.Equal(t, 1.0, promtest.Value(t, reg, "outbox_sink_up"), "the breaker stays closed")
}

// TestPublishInFlightWhenTheSinkGoesDownCostsNoAttempt: an event's publish
// is in flight, the sink acknowledging other publishes meanwhile, when the
// sink goes down (every call hangs: a network cut). Its timeout followed
// other acknowledgements, yet the sink is down, not the event: with
// MaxAttempts 1 a single counted attempt would quarantine it. It is
// published once the sink is back, its attempts unused.
func TestPublishInFlightWhenTheSinkGoesDownCostsNoAttempt(t *testing.T) {
	t.Parallel()
	var (
		down     atomic.Bool
		target   atomic.Value // uuid.UUID: the event in flight at the cut
		inFlight = make(chan struct{})
		once     sync.Once
		lastAck  atomic.Int64
	)
	b := setup(t, func(ctx context.Context, e outbox.Event) error {
		if id, _ := target.Load().(uuid.UUID); id == e.ID {
			fired := false
			once.Do(func() { fired = true; close(inFlight) })
			if fired {
				return hangs(ctx) // the call the cut catches
			}
		}
		if down.Load() {
			return hangs(ctx)
		}
		lastAck.Store(time.Now().UnixNano())
		return nil
	})
	reg := prometheus.NewRegistry()
	r := b.newRelay(t, outbox.RelayConfig{
		Registerer: reg, Lease: 2 * time.Second, PublishTimeout: 300 * time.Millisecond, MaxAttempts: 1,
		BreakerThreshold: 3, ProbeBase: 20 * time.Millisecond, ProbeMax: 50 * time.Millisecond, PollInterval: 50 * time.Millisecond,
	})
	busyProducer(t, b.pool, nil)
	run(t, r)
	e := testdb.Enqueue(t, b.pool, testdb.Event(t, "cut", "Created"))[0]
	target.Store(e.ID)
	<-inFlight
	began := time.Now()
	eventually(t, 10*time.Second, func() bool { return lastAck.Load() > began.UnixNano() }, "the sink acknowledges another publish while the event's is in flight")
	down.Store(true)
	eventually(t, 30*time.Second, func() bool { return promtest.Value(t, reg, "outbox_sink_up") == 0 }, "the breaker opens")
	row := readRow(t, b.pool, e.ID)
	require.Nil(t, row.Quarantined, "quarantined for the cut: %s", stringer(func() string { return *row.LastError }))
	down.Store(false)
	eventually(t, 30*time.Second, func() bool { return published(b.pool, e.ID) }, "published once the sink is back")
	row = readRow(t, b.pool, e.ID)
	require.Nil(t, row.Quarantined)
	require.Equal(t, 1, row.Attempts, "the cut cost the event no attempt: only the publish that succeeded counts")
}
