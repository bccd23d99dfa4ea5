package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// setupCDC is setup on a database of the private wal_level=logical server.
func setupCDC(t *testing.T, fn func(ctx context.Context, e outbox.Event) error) *testBundle {
	t.Helper()
	pool, url := testdb.NewLogical(t)
	return &testBundle{pool: pool, url: url, rec: newRecorder(fn)}
}

// newCDC builds a CDC relay with a slot of the test's own (slots are
// server-wide) and test-friendly timings.
func (b *testBundle) newCDC(t *testing.T, cfg outbox.CDCConfig) *outbox.CDCRelay {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	if cfg.Slot == "" {
		cfg.Slot = testSlot(t)
	}
	cfg.StatusInterval = cmpOr(cfg.StatusInterval, 50*time.Millisecond)
	cfg.StandbyRetry = cmpOr(cfg.StandbyRetry, 100*time.Millisecond)
	cfg.PollInterval = cmpOr(cfg.PollInterval, 200*time.Millisecond)
	cfg.RetryBase = cmpOr(cfg.RetryBase, 20*time.Millisecond)
	cfg.RetryMax = cmpOr(cfg.RetryMax, 100*time.Millisecond)
	r, err := outbox.NewCDCRelay(b.pool, b.rec, cfg)
	require.NoError(t, err)
	return r
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

var slotSeq atomic.Int64

func testSlot(t *testing.T) string {
	return fmt.Sprintf("outflow_test_%d_%s", slotSeq.Add(1), strings.ReplaceAll(uuid.NewString(), "-", "")[:8])
}

// startStreaming runs a CDC relay and waits until it streams.
func (b *testBundle) startStreaming(t *testing.T, cfg outbox.CDCConfig) (stop func()) {
	t.Helper()
	r := b.newCDC(t, cfg)
	stop = run(t, r)
	waitStreaming(t, b.pool, r)
	return stop
}

// waitStreaming waits until r's replication session streams (a slot is
// also active for a moment while it is being created).
func waitStreaming(t *testing.T, pool *pgxpool.Pool, r *outbox.CDCRelay) {
	t.Helper()
	eventually(t, 30*time.Second, func() bool {
		var n int
		err := pool.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'`,
			outbox.CDCApplicationName(r.Owner())).Scan(&n)
		return err == nil && n == 1
	}, "relay %s streams", r.Owner())
}

func currentLSN(t *testing.T, pool *pgxpool.Pool) pglogrepl.LSN {
	t.Helper()
	var s string
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT pg_current_wal_lsn()::text").Scan(&s))
	lsn, err := pglogrepl.ParseLSN(s)
	require.NoError(t, err)
	return lsn
}

func confirmedLSN(t *testing.T, pool *pgxpool.Pool, slot string) pglogrepl.LSN {
	t.Helper()
	st, ok, err := outboxops.Slot(context.Background(), pool, slot)
	require.NoError(t, err)
	require.True(t, ok, "slot %s exists", slot)
	lsn, err := pglogrepl.ParseLSN(st.ConfirmedFlushLSN)
	require.NoError(t, err)
	return lsn
}

// laneChecker is a publisher check: one aggregate never has two publishes at
// once, and its events come in sequence order.
type laneChecker struct {
	mu       sync.Mutex
	inFlight map[string]bool
	last     map[string]int64
	maxConc  int
	conc     int
	errs     []string
}

func newLaneChecker() *laneChecker {
	return &laneChecker{inFlight: map[string]bool{}, last: map[string]int64{}}
}

func (c *laneChecker) enter(e outbox.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFlight[e.AggregateID] {
		c.errs = append(c.errs, fmt.Sprintf("aggregate %s: two publishes at once", e.AggregateID))
	}
	if e.Sequence <= c.last[e.AggregateID] {
		// A duplicate of an accepted event is allowed; an overtaking one is not.
		if e.Sequence < c.last[e.AggregateID] {
			c.errs = append(c.errs, fmt.Sprintf("aggregate %s: seq %d after %d", e.AggregateID, e.Sequence, c.last[e.AggregateID]))
		}
	} else if e.Sequence != c.last[e.AggregateID]+1 {
		c.errs = append(c.errs, fmt.Sprintf("aggregate %s: seq %d overtook %d", e.AggregateID, e.Sequence, c.last[e.AggregateID]+1))
	}
	c.inFlight[e.AggregateID] = true
	c.conc++
	c.maxConc = max(c.maxConc, c.conc)
}

// leave records the outcome: an acknowledged event moves its lane on.
func (c *laneChecker) leave(e outbox.Event, acked bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight[e.AggregateID] = false
	c.conc--
	if acked {
		c.last[e.AggregateID] = max(c.last[e.AggregateID], e.Sequence)
	}
}

// TestCDCPublishesInterleavedOrdersInOrder: many orders whose events commit
// interleaved reach the publisher concurrently across orders, in sequence
// order and one at a time within each, every one marked published.
func TestCDCPublishesInterleavedOrdersInOrder(t *testing.T) {
	t.Parallel()
	lc := newLaneChecker()
	b := setupCDC(t, func(ctx context.Context, e outbox.Event) error {
		lc.enter(e)
		time.Sleep(time.Duration(e.Sequence%3) * time.Millisecond)
		lc.leave(e, true)
		return nil
	})
	reg := prometheus.NewRegistry()
	r := b.newCDC(t, outbox.CDCConfig{RelayConfig: outbox.RelayConfig{Registerer: reg, MaxInFlight: 8, GaugeInterval: 50 * time.Millisecond}})
	run(t, r)
	waitStreaming(t, b.pool, r)

	const orders, steps = 40, 5
	var all []outbox.Event
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 { // four writers, each committing one event a transaction
		wg.Go(func() {
			for s := range steps {
				for o := w; o < orders; o += 4 {
					ev := testdb.Enqueue(t, b.pool, testdb.Event(t, fmt.Sprintf("order-%d", o), fmt.Sprintf("Step%d", s)))
					mu.Lock()
					all = append(all, ev...)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	eventually(t, 30*time.Second, func() bool { return published(b.pool, ids(all)...) }, "every event published")
	lc.mu.Lock()
	defer lc.mu.Unlock()
	require.Empty(t, lc.errs)
	require.Greater(t, lc.maxConc, 1, "orders are published concurrently")
	for o := range orders {
		require.Equal(t, int64(steps), lc.last[fmt.Sprintf("order-%d", o)])
	}
	for _, e := range all {
		row := readRow(t, b.pool, e.ID)
		require.NotNil(t, row.ClaimedBy, "event %s", e.ID)
		require.Equal(t, outbox.CDCStreamOwnerForTest(r.Owner()), *row.ClaimedBy, "the stream, under its own name, published %s", e.ID)
		require.Nil(t, row.ClaimUntil, "the mark ended the stream's lease on %s", e.ID)
	}
	// Counted once the mark's COMMIT has returned: the rows may read published first.
	eventually(t, 10*time.Second, func() bool {
		v, err := promtest.Sum(reg, "outbox_published_total")
		return err == nil && v == float64(len(all))
	}, "outbox_published_total counts every event")
	eventually(t, 10*time.Second, func() bool {
		return confirmedLSN(t, b.pool, r.Config().Slot) >= currentLSNNoWrite(b.pool)
	}, "the slot confirms everything once settled")
}

// currentLSNNoWrite reads pg_current_wal_lsn, 0 on error (for eventually).
func currentLSNNoWrite(pool *pgxpool.Pool) pglogrepl.LSN {
	var s string
	if err := pool.QueryRow(context.Background(), "SELECT pg_current_wal_lsn()::text").Scan(&s); err != nil {
		return 0
	}
	lsn, _ := pglogrepl.ParseLSN(s)
	return lsn
}

// TestCDCWatermarkWaitsForTheSlowestPublish: while one publish is slow, the
// slot's confirmed position stays before its transaction, however many later
// events are acknowledged and marked; once it is acknowledged, the position
// passes them all.
func TestCDCWatermarkWaitsForTheSlowestPublish(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var slowID atomic.Value
	slowID.Store(uuid.Nil)
	b := setupCDC(t, func(ctx context.Context, e outbox.Event) error {
		if e.ID == slowID.Load().(uuid.UUID) {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	reg := prometheus.NewRegistry()
	r := b.newCDC(t, outbox.CDCConfig{RelayConfig: outbox.RelayConfig{Lease: time.Minute, PublishTimeout: 30 * time.Second,
		Registerer: reg, GaugeInterval: 50 * time.Millisecond}})
	run(t, r)
	slot := r.Config().Slot
	waitStreaming(t, b.pool, r)

	slow := testdb.Event(t, "slow", "Step")
	slow.ID = uuid.Must(uuid.NewV7())
	slowID.Store(slow.ID)
	testdb.Enqueue(t, b.pool, slow)
	afterSlow := currentLSN(t, b.pool)
	var fast []outbox.Event
	for i := range 10 {
		fast = append(fast, testdb.Enqueue(t, b.pool, testdb.Event(t, fmt.Sprintf("fast-%d", i), "Step"))...)
	}
	eventually(t, 20*time.Second, func() bool { return published(b.pool, ids(fast)...) }, "later events published while one is slow")
	// Several confirmations go by: none may pass the slow event.
	for range 5 {
		time.Sleep(60 * time.Millisecond)
		require.Less(t, confirmedLSN(t, b.pool, slot), afterSlow, "the confirmed position passed an unacknowledged event")
	}
	require.False(t, published(b.pool, slow.ID))
	// The gauges see the stuck position: its age, the WAL behind it.
	eventually(t, 10*time.Second, func() bool {
		lag, err1 := promtest.Sum(reg, "outbox_cdc_slot_lag_seconds")
		bytes, err2 := promtest.Sum(reg, "outbox_cdc_slot_lag_bytes")
		retained, err3 := promtest.Sum(reg, "outbox_cdc_wal_retained_bytes")
		return err1 == nil && err2 == nil && err3 == nil && lag > 0.1 && bytes > 0 && retained >= bytes
	}, "slot gauges report the lag")
	limit := promtest.Value(t, reg, "outbox_cdc_max_slot_wal_keep_size_bytes")
	require.Equal(t, -1.0, limit, "the test server sets no max_slot_wal_keep_size")
	active := promtest.Value(t, reg, "outbox_cdc_slot_active")
	require.Equal(t, 1.0, active, "the relay streams its slot")

	close(release)
	end := currentLSN(t, b.pool)
	eventually(t, 20*time.Second, func() bool { return published(b.pool, slow.ID) }, "slow event published")
	eventually(t, 10*time.Second, func() bool { return confirmedLSN(t, b.pool, slot) >= end }, "the position passes everything once settled")
	eventually(t, 10*time.Second, func() bool {
		lag, err := promtest.Sum(reg, "outbox_cdc_slot_lag_seconds")
		return err == nil && lag == 0
	}, "caught up, the lag gauge drops to zero")
}

// TestCDCStandbyTakesOver: a second relay on the same slot stands by while
// the first streams (PostgreSQL lets one session stream a slot), and streams
// once the first stops; nothing committed in between is lost.
func TestCDCStandbyTakesOver(t *testing.T) {
	t.Parallel()
	b := setupCDC(t, nil)
	slot := testSlot(t)
	active := b.newCDC(t, outbox.CDCConfig{Slot: slot})
	stopActive := run(t, active)
	waitStreaming(t, b.pool, active)
	standby := b.newCDC(t, outbox.CDCConfig{Slot: slot})
	run(t, standby)
	first := testdb.Enqueue(t, b.pool, testdb.Event(t, "a", "Created"))
	eventually(t, 10*time.Second, func() bool { return published(b.pool, ids(first)...) }, "the active relay publishes")
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_stat_replication WHERE application_name = $1`, outbox.CDCApplicationName(standby.Owner())).Scan(&n))
	require.Zero(t, n, "the standby does not stream while the active relay does")

	stopActive()
	second := testdb.Enqueue(t, b.pool, testdb.Event(t, "a", "Cancelled"))
	waitStreaming(t, b.pool, standby)
	eventually(t, 20*time.Second, func() bool { return published(b.pool, ids(second)...) }, "the standby takes over")
}

// TestCDCLostStreamIsTriedAgainAtOnce: a relay whose walsender the server
// ended (as a restart or a dropped connection ends it) streams again within
// its error backoff, not after StandbyRetry, which is for a slot another
// relay streams: the event committed meanwhile is published long before a
// minute. The sweeper's Grace of an hour leaves the stream alone to
// publish it. Failed before: the retry waited max(StandbyRetry, backoff).
func TestCDCLostStreamIsTriedAgainAtOnce(t *testing.T) {
	t.Parallel()
	b := setupCDC(t, nil)
	r := b.newCDC(t, outbox.CDCConfig{StandbyRetry: time.Minute, Grace: time.Hour})
	run(t, r)
	waitStreaming(t, b.pool, r)
	var ended bool
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT pg_terminate_backend(pid) FROM pg_stat_replication WHERE application_name = $1`,
		outbox.CDCApplicationName(r.Owner())).Scan(&ended))
	require.True(t, ended, "the walsender ended")
	e := testdb.Enqueue(t, b.pool, testdb.Event(t, "a", "Created"))
	eventually(t, 15*time.Second, func() bool { return published(b.pool, ids(e)...) }, "the relay streams again at once")
}

// TestCDCWALLevelError: on a server without wal_level=logical the relay
// refuses to run with an error that names the setting.
func TestCDCWALLevelError(t *testing.T) {
	t.Parallel()
	b := setup(t, nil) // the shared server: wal_level=replica
	r, err := outbox.NewCDCRelay(b.pool, b.rec, outbox.CDCConfig{RelayConfig: outbox.RelayConfig{Logger: quietLogger()}})
	require.NoError(t, err)
	err = r.Run(context.Background())
	require.ErrorIs(t, err, outbox.ErrWALLevel)
	require.Contains(t, err.Error(), "wal_level=logical")
	require.Contains(t, err.Error(), "wal_level=replica")
}

// TestCDCRestartResumesWithoutLoss: events committed while the relay is
// stopped, and while a new one starts, are all published once the new one
// runs, and its slot position passes them.
func TestCDCRestartResumesWithoutLoss(t *testing.T) {
	t.Parallel()
	b := setupCDC(t, nil)
	slot := testSlot(t)
	stop := b.startStreaming(t, outbox.CDCConfig{Slot: slot})
	var all []outbox.Event
	for i := range 10 {
		all = append(all, testdb.Enqueue(t, b.pool, testdb.Event(t, fmt.Sprintf("o-%d", i), "Created"))...)
	}
	eventually(t, 20*time.Second, func() bool { return published(b.pool, ids(all)...) }, "first relay publishes")
	stop()
	before := confirmedLSN(t, b.pool, slot)

	var whileDown []outbox.Event
	for i := range 10 {
		whileDown = append(whileDown, testdb.Enqueue(t, b.pool, testdb.Event(t, fmt.Sprintf("o-%d", i), "Cancelled"))...)
	}
	end := currentLSN(t, b.pool)
	second := b.newCDC(t, outbox.CDCConfig{Slot: slot})
	run(t, second)
	eventually(t, 20*time.Second, func() bool { return published(b.pool, ids(whileDown)...) }, "events committed while down published")
	eventually(t, 10*time.Second, func() bool { return confirmedLSN(t, b.pool, slot) >= end }, "the slot resumes past them")
	require.Greater(t, end, before)
	acked := b.rec.ackedIDs()
	for _, e := range append(all, whileDown...) {
		require.GreaterOrEqual(t, acked[e.ID], 1, "event %s lost", e.ID)
	}
}

// TestCDCMissingSlotIsRecreatedAndBackfilled: a slot dropped while no relay
// streams it loses the position of what was committed meanwhile; the relay
// creates a new slot and backfills those events by polling before it
// streams.
func TestCDCMissingSlotIsRecreatedAndBackfilled(t *testing.T) {
	t.Parallel()
	b := setupCDC(t, nil)
	slot := testSlot(t)
	stop := b.startStreaming(t, outbox.CDCConfig{Slot: slot})
	stop()
	eventually(t, 10*time.Second, func() bool {
		// The walsender may outlive the relay's connection by a moment.
		_, err := b.pool.Exec(context.Background(), "SELECT pg_drop_replication_slot($1)", slot)
		return err == nil
	}, "slot dropped")
	var lost []outbox.Event
	for i := range 10 {
		lost = append(lost, testdb.Enqueue(t, b.pool, testdb.Event(t, fmt.Sprintf("o-%d", i), "Created"))...)
	}
	second := b.newCDC(t, outbox.CDCConfig{Slot: slot, Grace: time.Hour})
	run(t, second)
	eventually(t, 20*time.Second, func() bool { return published(b.pool, ids(lost)...) }, "the backfill publishes what no slot kept")
	waitStreaming(t, b.pool, second)
	later := testdb.Enqueue(t, b.pool, testdb.Event(t, "o-later", "Created"))
	eventually(t, 20*time.Second, func() bool { return published(b.pool, ids(later)...) }, "then the new slot streams")
}

// TestCDCHandsOffOrdersWithAnUnpublishedPredecessor: an order whose first
// event failed (in backoff with the sweeper) keeps its second event off the
// stream: the second is published only after the first, by the polling path,
// while other orders flow.
func TestCDCHandsOffOrdersWithAnUnpublishedPredecessor(t *testing.T) {
	t.Parallel()
	lc := newLaneChecker()
	var failFirst atomic.Int32
	failFirst.Store(3)
	b := setupCDC(t, func(ctx context.Context, e outbox.Event) error {
		lc.enter(e)
		if e.AggregateID == "stuck" && e.Sequence == 1 && failFirst.Add(-1) >= 0 {
			lc.leave(e, false)
			return errFlaky
		}
		if e.AggregateID == "stuck" && e.Sequence == 2 {
			time.Sleep(5 * time.Millisecond)
		}
		lc.leave(e, true)
		return nil
	})
	r := b.newCDC(t, outbox.CDCConfig{Grace: time.Hour, RelayConfig: outbox.RelayConfig{RetryBase: 200 * time.Millisecond, RetryMax: 300 * time.Millisecond}})
	run(t, r)
	waitStreaming(t, b.pool, r)

	first := testdb.Enqueue(t, b.pool, testdb.Event(t, "stuck", "Created"))
	eventually(t, 10*time.Second, func() bool { return readRow(t, b.pool, first[0].ID).Attempts >= 1 }, "the first publish fails and is recorded")
	second := testdb.Enqueue(t, b.pool, testdb.Event(t, "stuck", "Cancelled"))
	other := testdb.Enqueue(t, b.pool, testdb.Event(t, "other", "Created"))
	eventually(t, 10*time.Second, func() bool { return published(b.pool, ids(other)...) }, "other orders flow")
	eventually(t, 20*time.Second, func() bool { return published(b.pool, first[0].ID, second[0].ID) }, "the stuck order drains through the sweeper")
	lc.mu.Lock()
	defer lc.mu.Unlock()
	require.Empty(t, lc.errs)
	require.GreaterOrEqual(t, readRow(t, b.pool, first[0].ID).Attempts, 2, "retried by the polling path")
	require.Equal(t, 1, b.rec.callsFor(second[0].ID), "the second event waited for the first")
}

// TestCDCQuarantinesPoisonEvents: a permanent failure is quarantined at once,
// as in poll mode, and holds its order's later event back until an operator
// skips it; then the later event flows.
func TestCDCQuarantinesPoisonEvents(t *testing.T) {
	t.Parallel()
	b := setupCDC(t, func(ctx context.Context, e outbox.Event) error {
		if e.Type == "Poison" {
			return outbox.Permanent(errors.New("no workflow for Poison"))
		}
		return nil
	})
	r := b.newCDC(t, outbox.CDCConfig{Grace: time.Hour})
	run(t, r)
	waitStreaming(t, b.pool, r)
	poison := testdb.Enqueue(t, b.pool, testdb.Event(t, "p", "Poison"))
	eventually(t, 10*time.Second, func() bool { return quarantined(b.pool, poison[0].ID) }, "poison quarantined")
	row := readRow(t, b.pool, poison[0].ID)
	require.Equal(t, 1, row.Attempts)
	require.Contains(t, *row.LastError, "no workflow for Poison")
	next := testdb.Enqueue(t, b.pool, testdb.Event(t, "p", "Cancelled"))
	fine := testdb.Enqueue(t, b.pool, testdb.Event(t, "q", "Created"))
	eventually(t, 10*time.Second, func() bool { return published(b.pool, ids(fine)...) }, "other orders flow")
	require.Zero(t, b.rec.callsFor(next[0].ID), "held back behind the quarantined event")

	_, err := outboxops.Skip(context.Background(), b.pool, poison[0].ID, "poison", "test")
	require.NoError(t, err)
	eventually(t, 20*time.Second, func() bool { return published(b.pool, ids(next)...) }, "after the skip the later event flows")
}
