package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// The log source (OUTFLOW_RELAY_SOURCE=log): model/log.pml's protocol
// against real PostgreSQL.

var logEnqueuer = outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true})

// enqueueLog commits events to the log in one transaction.
func enqueueLog(t *testing.T, pool *pgxpool.Pool, events ...outbox.Event) []outbox.Event {
	t.Helper()
	return enqueueWith(t, pool, logEnqueuer, events...)
}

// newLogRelay builds a log relay over b's pool with test defaults: a short
// poll, a quiet logger, a short retry backoff.
func (b *testBundle) newLogRelay(t *testing.T, cfg outbox.LogConfig) *outbox.LogRelay {
	t.Helper()
	cfg.PollInterval = max(cfg.PollInterval, 100*time.Millisecond)
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase, cfg.RetryMax = 10*time.Millisecond, 50*time.Millisecond
	}
	r, err := outbox.NewLogRelay(b.pool, b.rec, cfg)
	require.NoError(t, err)
	return r
}

// sameLogPartition returns n order IDs whose events share one partition,
// and the partition.
func sameLogPartition(t *testing.T, pool *pgxpool.Pool, prefix string, n int) ([]string, int) {
	t.Helper()
	return testdb.SameLogPartition(t, pool, prefix, n)
}

// sequencesOf returns, per order, the sequences of the acknowledged events
// in the order they were acknowledged.
func (r *recorder) sequencesOf() map[string][]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]int64{}
	for _, e := range r.acked {
		out[e.AggregateID] = append(out[e.AggregateID], e.Sequence)
	}
	return out
}

// firstPublishes is sequencesOf without the repeats: each event's first
// acknowledgement only (delivery is at least once).
func (r *recorder) firstPublishes() map[string][]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[uuid.UUID]bool{}
	out := map[string][]int64{}
	for _, e := range r.acked {
		if !seen[e.ID] {
			seen[e.ID] = true
			out[e.AggregateID] = append(out[e.AggregateID], e.Sequence)
		}
	}
	return out
}

func seq(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// logUntouched fails unless no row of the log was ever updated or locked
// and nothing went to outbox_events: the source writes nothing per event.
func logUntouched(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	var touched, events int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM outbox_log WHERE xmax <> '0'), (SELECT count(*) FROM outbox_events)`).Scan(&touched, &events))
	require.Zero(t, touched, "log rows are inserted and never updated")
	require.Zero(t, events, "the log enqueuer writes nothing to outbox_events")
}

func expireLogLeases(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `UPDATE outbox_log_cursors SET lease_until = now() - interval '1 second' WHERE lease_until IS NOT NULL`)
	require.NoError(t, err)
}

func logCursor(t *testing.T, pool *pgxpool.Pool, partition int) (gate, pos, epoch int64, tries int) {
	t.Helper()
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT gate, pos, epoch, tries FROM outbox_log_cursors WHERE partition = $1`, partition).Scan(&gate, &pos, &epoch, &tries))
	return
}

// readLog is ReadForTest until the batch has n events: the horizon is the
// server's, so another test's open transaction may hold it back a moment.
func readLog(t *testing.T, r *outbox.LogRelay, partition, n int) *outbox.LogBatchForTest {
	t.Helper()
	var batch *outbox.LogBatchForTest
	eventually(t, 30*time.Second, func() bool {
		var err error
		batch, err = r.ReadForTest(context.Background(), partition)
		require.NoError(t, err)
		return len(batch.Events()) > 0
	}, "the batch is readable")
	require.Len(t, batch.Events(), n)
	return batch
}

// takeAndRead has r take every free partition and read part's batch of n
// events: a reader's first steps, for a test to go on with (or to stop at,
// as a relay that died there).
func takeAndRead(t *testing.T, r *outbox.LogRelay, part, n int) *outbox.LogBatchForTest {
	t.Helper()
	_, err := r.TakeForTest(context.Background())
	require.NoError(t, err)
	return readLog(t, r, part, n)
}

// waitLogPublished waits until the cursor passed every event of ids with no
// hold owning it: acknowledged is not enough, the advance comes after.
func waitLogPublished(t *testing.T, pool *pgxpool.Pool, ids ...uuid.UUID) {
	t.Helper()
	eventually(t, 30*time.Second, func() bool {
		for _, id := range ids {
			e, err := outboxops.LogEventByID(context.Background(), pool, id)
			require.NoError(t, err)
			if e.State() != "published" {
				return false
			}
		}
		return true
	}, "published, the cursor past them")
}

func logHolds(t *testing.T, pool *pgxpool.Pool) []outboxops.HeldOrder {
	t.Helper()
	hs, err := outboxops.LogHolds(context.Background(), pool)
	require.NoError(t, err)
	return hs
}

// TestLogDeliversEveryOrderInSequence: orders spread over the partitions,
// several events per transaction and several transactions per order, are
// all delivered, each order in sequence, by two relays sharing the
// partitions; the log is never written after the insert.
func TestLogDeliversEveryOrderInSequence(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	const orders, perOrder = 40, 6
	for round := range 3 {
		var evs []outbox.Event
		for o := range orders {
			for range perOrder / 3 {
				evs = append(evs, testdb.Event(t, fmt.Sprintf("o-%d", o), fmt.Sprintf("E%d", round)))
			}
		}
		enqueueLog(t, b.pool, evs...)
	}
	run(t, b.newLogRelay(t, outbox.LogConfig{MaxPartitions: 8, RelayConfig: outbox.RelayConfig{BatchSize: 7}}))
	run(t, b.newLogRelay(t, outbox.LogConfig{MaxPartitions: 8, RelayConfig: outbox.RelayConfig{BatchSize: 7}}))
	eventually(t, 30*time.Second, func() bool { return len(b.rec.ackedIDs()) == orders*perOrder }, "every event delivered")
	for id, got := range b.rec.firstPublishes() {
		require.Equal(t, seq(perOrder), got, "order %s in sequence", id)
	}
	logUntouched(t, b.pool)
}

// TestLogOverlappingTransactionsKeepTheOrder is the case Watermill gets
// wrong: two transactions on one order overlap, the earlier xid takes the
// later sequence. The gate (greatest(last_gate, xid)) keeps the sequence
// order, and the horizon holds the first event back while the other
// transaction is open: delivered [1 2], never [2 1].
func TestLogOverlappingTransactionsKeepTheOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	run(t, b.newLogRelay(t, outbox.LogConfig{}))

	early, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = early.Rollback(ctx) }()
	var earlyXID, lateXID int64
	require.NoError(t, early.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&earlyXID))

	late, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, late.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&lateXID))
	require.Less(t, earlyXID, lateXID)
	first, err := logEnqueuer.Enqueue(ctx, late, testdb.Event(t, "w-1", "OrderCreated"))
	require.NoError(t, err)
	require.NoError(t, late.Commit(ctx))
	require.EqualValues(t, 1, first[0].Sequence, "the later xid locked the order first")

	// The earlier transaction is open: the horizon holds sequence 1 back
	// (its gate, the later xid, is above the snapshot's xmin).
	time.Sleep(300 * time.Millisecond)
	require.Empty(t, b.rec.ackedIDs(), "nothing delivered while an older transaction is open")

	second, err := logEnqueuer.Enqueue(ctx, early, testdb.Event(t, "w-1", "OrderPaid"))
	require.NoError(t, err)
	require.EqualValues(t, 2, second[0].Sequence)
	require.NoError(t, early.Commit(ctx))

	var gates []int64
	rows, err := b.pool.Query(ctx, `SELECT gate FROM outbox_log ORDER BY aggregate_sequence`)
	require.NoError(t, err)
	gates, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Equal(t, []int64{lateXID, lateXID}, gates, "sequence 2 carries the lane's gate, not its own earlier xid")

	eventually(t, 30*time.Second, func() bool { return len(b.rec.ackedIDs()) == 2 }, "both delivered")
	require.Equal(t, []int64{1, 2}, b.rec.sequencesOf()["w-1"])
}

// TestLogHorizonDelaysNeverLoses: an open transaction that took an xid
// before an event's transaction (model/log.pml's mutant log_no_horizon: it
// commits later with a lower gate) holds the event back until it ends;
// then both are delivered, the later commit included, though its key sorts
// before the cursor the first event would have given.
func TestLogHorizonDelaysNeverLoses(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ids, _ := sameLogPartition(t, b.pool, "h", 2)
	// A safety poll far beyond the test: what ends a wait is a NOTIFY, or
	// the reader's own look again at events it found above the horizon
	// (within a second; the test allows for other databases' transactions
	// on the shared server, which hold the horizon too).
	run(t, b.newLogRelay(t, outbox.LogConfig{RelayConfig: outbox.RelayConfig{PollInterval: time.Minute}}))

	older, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = older.Rollback(ctx) }()
	_, err = older.Exec(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)

	enqueueLog(t, b.pool, testdb.Event(t, ids[0], "OrderCreated"))
	time.Sleep(300 * time.Millisecond)
	require.Empty(t, b.rec.ackedIDs(), "held back by the horizon, not lost")

	_, err = logEnqueuer.Enqueue(ctx, older, testdb.Event(t, ids[1], "OrderCreated"))
	require.NoError(t, err)
	require.NoError(t, older.Commit(ctx))
	eventually(t, 30*time.Second, func() bool { return len(b.rec.ackedIDs()) == 2 }, "both delivered once the older transaction ended")

	// An unrelated open transaction (no outbox write at all) delays too.
	unrelated, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = unrelated.Rollback(ctx) }()
	_, err = unrelated.Exec(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)
	enqueueLog(t, b.pool, testdb.Event(t, ids[0], "OrderPaid"))
	time.Sleep(300 * time.Millisecond)
	require.Len(t, b.rec.ackedIDs(), 2, "delayed by the unrelated transaction")
	require.NoError(t, unrelated.Rollback(ctx))
	eventually(t, 20*time.Second, func() bool { return len(b.rec.ackedIDs()) == 3 },
		"delivered soon after it ended, though its end sent no NOTIFY")
}

// TestLogPoisonHoldsOnlyItsOrder: an event whose publish fails for good
// puts its order under a quarantined hold; the partition's other orders
// flow on, and so do its later events once an operator skips it; a retry
// publishes it once the publisher takes it.
func TestLogPoisonHoldsOnlyItsOrder(t *testing.T) {
	t.Parallel()
	var poison sync.Map // event ID -> true while it fails
	b := setup(t, func(_ context.Context, e outbox.Event) error {
		if _, bad := poison.Load(e.ID); bad {
			return outbox.Permanent(errors.New("no route for this event"))
		}
		return nil
	})
	ctx := context.Background()
	ids, part := sameLogPartition(t, b.pool, "p", 3)
	bad, good, other := ids[0], ids[1], ids[2]

	var evs []outbox.Event
	for _, id := range []string{bad, good} {
		for i := range 3 {
			evs = append(evs, testdb.Event(t, id, fmt.Sprintf("E%d", i+1)))
		}
	}
	written := enqueueLog(t, b.pool, evs...)
	poison.Store(written[1].ID, true) // bad's sequence 2
	run(t, b.newLogRelay(t, outbox.LogConfig{}))

	eventually(t, 30*time.Second, func() bool {
		hs := logHolds(t, b.pool)
		return len(b.rec.sequencesOf()[good]) == 3 && len(hs) == 1 && hs[0].Quarantined
	}, "the good order delivered, the bad one held")
	hs := logHolds(t, b.pool)
	require.Equal(t, bad, hs[0].AggregateID)
	require.Equal(t, part, hs[0].Partition)
	require.Contains(t, hs[0].LastError, "no route")
	require.Equal(t, []int64{1}, b.rec.sequencesOf()[bad], "sequence 3 waits behind the poisoned 2")

	// The partition keeps flowing for the other orders.
	enqueueLog(t, b.pool, testdb.Event(t, other, "OrderCreated"), testdb.Event(t, good, "E4"))
	eventually(t, 30*time.Second, func() bool {
		return len(b.rec.sequencesOf()[other]) == 1 && len(b.rec.sequencesOf()[good]) == 4
	}, "the partition's other orders flow on")
	require.Equal(t, []int64{1}, b.rec.sequencesOf()[bad])

	// Retry while it still fails: quarantined again, nothing skipped.
	require.NoError(t, outboxops.RetryLogHold(ctx, b.pool, "order", bad))
	eventually(t, 30*time.Second, func() bool {
		hs := logHolds(t, b.pool)
		return len(hs) == 1 && hs[0].Quarantined && b.rec.callsFor(written[1].ID) >= 2
	}, "retried and quarantined again")

	// Skip it: the order's later events follow, in sequence, and the hold
	// is released.
	skipped, err := outboxops.SkipLogHold(ctx, b.pool, "order", bad, "ops@test", "no route, ever")
	require.NoError(t, err)
	require.Equal(t, written[1].ID, skipped)
	enqueueLog(t, b.pool, testdb.Event(t, bad, "E4"))
	eventually(t, 30*time.Second, func() bool {
		return len(b.rec.sequencesOf()[bad]) == 3 && len(logHolds(t, b.pool)) == 0
	}, "the order's later events delivered after the skip, the hold released")
	require.Equal(t, []int64{1, 3, 4}, b.rec.sequencesOf()[bad])
	require.ErrorIs(t, outboxops.RetryLogHold(ctx, b.pool, "order", bad), outboxops.ErrNoQuarantinedHold)
	logUntouched(t, b.pool)
}

// TestLogTransientFailureRetriesThroughTheHold: an event that fails twice
// for its own (transient) fault is retried by the hold worker with
// backoff, and its order's later events follow it in sequence; a retry
// after quarantine (MaxAttempts) publishes it once the publisher recovers.
func TestLogTransientFailureRetriesThroughTheHold(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	failures := map[string]int{"flaky": 2, "stuck": 1000}
	b := setup(t, func(_ context.Context, e outbox.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if e.Sequence == 1 && failures[e.AggregateID] > 0 {
			failures[e.AggregateID]--
			return errors.New("the consumer rejected it")
		}
		return nil
	})
	ctx := context.Background()
	var evs []outbox.Event
	for _, id := range []string{"flaky", "stuck"} {
		for i := range 3 {
			evs = append(evs, testdb.Event(t, id, fmt.Sprintf("E%d", i+1)))
		}
	}
	enqueueLog(t, b.pool, evs...)
	run(t, b.newLogRelay(t, outbox.LogConfig{RelayConfig: outbox.RelayConfig{MaxAttempts: 3}}))

	eventually(t, 30*time.Second, func() bool { return len(b.rec.sequencesOf()["flaky"]) == 3 }, "the flaky order delivered")
	require.Equal(t, seq(3), b.rec.sequencesOf()["flaky"])
	eventually(t, 30*time.Second, func() bool {
		hs := logHolds(t, b.pool)
		return len(hs) == 1 && hs[0].AggregateID == "stuck" && hs[0].Quarantined
	}, "the stuck order quarantined after MaxAttempts")
	require.Empty(t, b.rec.sequencesOf()["stuck"])

	mu.Lock()
	failures["stuck"] = 0
	mu.Unlock()
	require.NoError(t, outboxops.RetryLogHold(ctx, b.pool, "order", "stuck"))
	eventually(t, 30*time.Second, func() bool {
		return len(b.rec.sequencesOf()["stuck"]) == 3 && len(logHolds(t, b.pool)) == 0
	}, "retried: delivered in sequence, the hold released")
	require.Equal(t, seq(3), b.rec.sequencesOf()["stuck"])
}

// TestLogSinkOutageIsNotTheEventsFault: publishes that fail for the sink's
// fault stop the batch without a hold and cost no attempt; the events are
// delivered in sequence once the sink answers.
func TestLogSinkOutageIsNotTheEventsFault(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	down := true
	b := setup(t, func(_ context.Context, e outbox.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return outbox.SinkUnavailable(errors.New("connection refused"))
		}
		return nil
	})
	var evs []outbox.Event
	for i := range 4 {
		evs = append(evs, testdb.Event(t, "s-1", fmt.Sprintf("E%d", i+1)))
	}
	evs = enqueueLog(t, b.pool, evs...)
	run(t, b.newLogRelay(t, outbox.LogConfig{RelayConfig: outbox.RelayConfig{
		BreakerThreshold: 2, ProbeBase: 20 * time.Millisecond, ProbeMax: 50 * time.Millisecond, MaxAttempts: 1,
	}}))
	eventually(t, 30*time.Second, func() bool { return b.rec.callsFor(evs[0].ID) >= 2 }, "the sink was tried")
	require.Empty(t, logHolds(t, b.pool), "an outage makes no hold")
	mu.Lock()
	down = false
	mu.Unlock()
	eventually(t, 30*time.Second, func() bool { return len(b.rec.ackedIDs()) == 4 }, "delivered once the sink answers")
	require.Equal(t, seq(4), b.rec.sequencesOf()["s-1"])
}

// TestLogStaleEpochAdvanceRefused: a reader whose view of the holds is
// stale (the epoch moved after its read: a hold released or replayed)
// cannot advance; it reads the batch again, tries back to 0, and the
// events are delivered (again: at least once).
func TestLogStaleEpochAdvanceRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ids, part := sameLogPartition(t, b.pool, "e", 1)
	enqueueLog(t, b.pool, testdb.Event(t, ids[0], "E1"), testdb.Event(t, ids[0], "E2"))

	r := b.newLogRelay(t, outbox.LogConfig{})
	batch := takeAndRead(t, r, part, 2)
	r.PublishForTest(ctx, batch)
	require.Len(t, b.rec.ackedIDs(), 2)

	// What a hold's release (H4) or a replay (O3) does in its transaction.
	_, err := b.pool.Exec(ctx, `UPDATE outbox_log_cursors SET epoch = epoch + 1 WHERE partition = $1`, part)
	require.NoError(t, err)
	refused, err := r.AdvanceForTest(ctx, batch)
	require.NoError(t, err)
	require.True(t, refused, "the stale view cannot advance")
	gate, pos, epoch, tries := logCursor(t, b.pool, part)
	require.Zero(t, gate+pos, "the cursor did not move")
	require.EqualValues(t, 1, epoch)
	require.Zero(t, tries, "a refused advance is no crash")

	again := readLog(t, r, part, 2)
	require.Equal(t, batch.Events()[0].ID, again.Events()[0].ID, "the batch is read again")
	r.PublishForTest(ctx, again)
	refused, err = r.AdvanceForTest(ctx, again)
	require.NoError(t, err)
	require.False(t, refused)
	_, pos, _, _ = logCursor(t, b.pool, part)
	require.NotZero(t, pos)

	// A relay that lost the partition is fenced by the owner instead.
	enqueueLog(t, b.pool, testdb.Event(t, ids[0], "E3"))
	stale := readLog(t, r, part, 1)
	expireLogLeases(t, b.pool)
	other := b.newLogRelay(t, outbox.LogConfig{})
	_, err = other.TakeForTest(ctx)
	require.NoError(t, err)
	r.PublishForTest(ctx, stale)
	_, err = r.AdvanceForTest(ctx, stale)
	require.ErrorIs(t, err, outbox.ErrLogLeaseLostForTest)
	_, err = r.ReadForTest(ctx, part)
	require.ErrorIs(t, err, outbox.ErrLogLeaseLostForTest)
}

// TestLogCrashAtEachStep: a reader that dies after taking the partition,
// after reading, or after publishing (before its advance) loses nothing:
// once its lease expires another relay takes the partition over and
// delivers everything in sequence (what was published is published again).
func TestLogCrashAtEachStep(t *testing.T) {
	t.Parallel()
	for _, step := range []string{"take", "read", "publish"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			ctx := context.Background()
			ids, part := sameLogPartition(t, b.pool, "c", 2)
			var evs []outbox.Event
			for i := range 3 {
				for _, id := range ids {
					evs = append(evs, testdb.Event(t, id, fmt.Sprintf("E%d", i+1)))
				}
			}
			enqueueLog(t, b.pool, evs...)

			dead := b.newLogRelay(t, outbox.LogConfig{})
			_, err := dead.TakeForTest(ctx)
			require.NoError(t, err)
			if step != "take" {
				batch := readLog(t, dead, part, 6)
				if step == "publish" {
					dead.PublishForTest(ctx, batch)
					require.Len(t, b.rec.ackedIDs(), 6)
				}
				_, _, _, tries := logCursor(t, b.pool, part)
				require.Equal(t, 1, tries, "a batch begun and not finished")
			}

			// The successor cannot take the partition while the lease lives.
			succ := b.newLogRelay(t, outbox.LogConfig{})
			taken, err := succ.TakeForTest(ctx)
			require.NoError(t, err)
			require.NotContains(t, taken, part)

			expireLogLeases(t, b.pool)
			var last int64
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT max(pos) FROM outbox_log`).Scan(&last))
			run(t, b.newLogRelay(t, outbox.LogConfig{}))
			eventually(t, 30*time.Second, func() bool {
				_, pos, _, tries := logCursor(t, b.pool, part)
				return len(b.rec.ackedIDs()) == 6 && tries == 0 && pos == last
			}, "everything delivered by the successor, the cursor past it")
			for _, id := range ids {
				require.Equal(t, seq(3), b.rec.firstPublishes()[id])
			}
			require.Empty(t, logHolds(t, b.pool), "no crash here is the events' fault")
		})
	}
}

// TestLogCrashLoopIsolatesTheEvent: relays that keep dying at one position
// shrink the window to one event, and the next one isolates that event as
// a quarantined hold of its own order; the partition's other orders flow
// on, and a retry delivers it once it no longer kills anyone.
func TestLogCrashLoopIsolatesTheEvent(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ids, part := sameLogPartition(t, b.pool, "k", 2)
	killer, bystander := ids[0], ids[1]
	enqueueLog(t, b.pool,
		testdb.Event(t, killer, "E1"), testdb.Event(t, bystander, "E1"),
		testdb.Event(t, killer, "E2"), testdb.Event(t, bystander, "E2"))

	// The first relay dies with a full window, the second with a window of
	// one: the killer's E1 (each died publishing it).
	for i, window := range []int{4, 1} {
		batch := takeAndRead(t, b.newLogRelay(t, outbox.LogConfig{}), part, window)
		require.Equal(t, i, batch.Tries())
		require.Equal(t, killer, batch.Events()[0].AggregateID)
		expireLogLeases(t, b.pool)
	}
	_, _, _, tries := logCursor(t, b.pool, part)
	require.Equal(t, 2, tries)

	run(t, b.newLogRelay(t, outbox.LogConfig{}))
	eventually(t, 30*time.Second, func() bool {
		hs := logHolds(t, b.pool)
		return len(b.rec.sequencesOf()[bystander]) == 2 && len(hs) == 1 && hs[0].Quarantined
	}, "the event isolated, the other order delivered")
	hs := logHolds(t, b.pool)
	require.Equal(t, killer, hs[0].AggregateID)
	require.Contains(t, hs[0].LastError, "isolated")
	require.Empty(t, b.rec.sequencesOf()[killer], "an isolated event is not published")

	require.NoError(t, outboxops.RetryLogHold(ctx, b.pool, "order", killer))
	eventually(t, 30*time.Second, func() bool {
		return len(b.rec.sequencesOf()[killer]) == 2 && len(logHolds(t, b.pool)) == 0
	}, "retried: delivered in sequence")
	require.Equal(t, seq(2), b.rec.sequencesOf()[killer])
}

// TestLogConfigValidates: MaxPartitions is bounded, and the shared fields
// are validated as the polling relay's.
func TestLogConfigValidates(t *testing.T) {
	t.Parallel()
	b := &testBundle{rec: newRecorder(nil)}
	pool := &pgxpool.Pool{}
	_, err := outbox.NewLogRelay(pool, b.rec, outbox.LogConfig{MaxPartitions: outbox.LogPartitions + 1})
	require.ErrorContains(t, err, "MaxPartitions")
	_, err = outbox.NewLogRelay(pool, b.rec, outbox.LogConfig{RelayConfig: outbox.RelayConfig{BatchSize: -1}})
	require.ErrorContains(t, err, "BatchSize")
	_, err = outbox.NewLogRelay(pool, b.rec, outbox.LogConfig{ShareDelay: -time.Second})
	require.ErrorContains(t, err, "ShareDelay")
}

// TestLogShares: n relays get 16/n partitions each, the first 16 mod n by
// owner one more; a relay's MaxPartitions leaves the rest to the others;
// past 16 relays the last stand by.
func TestLogShares(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		caps []int
		want []int
	}{
		{caps: []int{16}, want: []int{16}},
		{caps: []int{16, 16}, want: []int{8, 8}},
		{caps: []int{16, 16, 16}, want: []int{6, 5, 5}},
		{caps: []int{2, 16, 16}, want: []int{2, 7, 7}},
		{caps: []int{16, 3}, want: []int{13, 3}},
		{caps: []int{4, 4}, want: []int{4, 4}},
		{caps: slices.Repeat([]int{16}, 17), want: append(slices.Repeat([]int{1}, 16), 0)},
	} {
		require.Equal(t, tc.want, outbox.LogSharesForTest(tc.caps), "MaxPartitions %v", tc.caps)
	}
}

// TestLogGauges: the horizon's age follows the oldest open transaction
// holding an xid, the pending events and the oldest one's age those waiting
// behind it, and the holds gauges a quarantined hold; publishes count in
// the relay's metrics.
func TestLogGauges(t *testing.T) {
	t.Parallel()
	b := setup(t, func(_ context.Context, e outbox.Event) error {
		if e.AggregateID == "g-bad" {
			return outbox.Permanent(errors.New("rejected"))
		}
		return nil
	})
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	run(t, b.newLogRelay(t, outbox.LogConfig{RelayConfig: outbox.RelayConfig{Registerer: reg, GaugeInterval: 20 * time.Millisecond}}))

	enqueueLog(t, b.pool, testdb.Event(t, "g-bad", "E1"), testdb.Event(t, "g-good", "E1"))
	eventually(t, 30*time.Second, func() bool {
		v, _ := promtest.Sum(reg, "outbox_log_quarantined_holds")
		h, _ := promtest.Sum(reg, "outbox_log_holds")
		p, _ := promtest.Sum(reg, "outbox_published_total")
		return v == 1 && h == 1 && p == 1
	}, "the quarantined hold and the publish counted")
	ahead, _ := promtest.Sum(reg, "outbox_log_ranges_ahead")
	require.Equal(t, 2.0, ahead, "the migration's two ranges beyond the sequence")

	open, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = open.Rollback(ctx) }()
	_, err = open.Exec(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)
	enqueueLog(t, b.pool, testdb.Event(t, "g-good", "E2"))
	eventually(t, 30*time.Second, func() bool {
		age, _ := promtest.Sum(reg, "outbox_log_horizon_age_seconds")
		pending, _ := promtest.Sum(reg, "outbox_log_pending_events")
		oldest, _ := promtest.Sum(reg, "outbox_log_oldest_pending_age_seconds")
		return age >= 0.2 && pending == 1 && oldest >= 0.2
	}, "the open transaction's age, the event waiting behind it")
	require.NoError(t, open.Rollback(ctx))
	eventually(t, 30*time.Second, func() bool {
		pending, _ := promtest.Sum(reg, "outbox_log_pending_events")
		oldest, _ := promtest.Sum(reg, "outbox_log_oldest_pending_age_seconds")
		return pending == 0 && oldest == 0 && len(b.rec.sequencesOf()["g-good"]) == 2
	}, "delivered once it ended")
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		require.NotEqual(t, "outbox_pending_events", f.GetName(), "outbox_events' backlog gauges are the poll relay's: never exported at 0 by a log relay")
	}
}

// TestLogReplay: an operator's replay of an order from a sequence delivers
// its events from there again, in order and marked as replays, through a
// hold that is released once caught up; it is refused for an order under a
// hold and for a sequence the order does not have.
func TestLogReplay(t *testing.T) {
	t.Parallel()
	b := setup(t, func(_ context.Context, e outbox.Event) error {
		if e.AggregateID == "r-bad" {
			return outbox.Permanent(errors.New("rejected"))
		}
		return nil
	})
	ctx := context.Background()
	enqueueLog(t, b.pool, testdb.Event(t, "r-1", "E1"), testdb.Event(t, "r-1", "E2"), testdb.Event(t, "r-1", "E3"), testdb.Event(t, "r-bad", "E1"))
	run(t, b.newLogRelay(t, outbox.LogConfig{}))
	eventually(t, 30*time.Second, func() bool {
		return len(b.rec.sequencesOf()["r-1"]) == 3 && len(logHolds(t, b.pool)) == 1
	}, "delivered, the bad order held")

	require.ErrorIs(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", "r-bad", 1), outboxops.ErrLogOrderHeld)
	require.ErrorIs(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", "r-1", 9), outboxops.ErrNoLogEvent)
	require.NoError(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", "r-1", 2))
	eventually(t, 30*time.Second, func() bool {
		return len(b.rec.sequencesOf()["r-1"]) == 5 && len(logHolds(t, b.pool)) == 1
	}, "replayed, the replay's hold released: %v", stringer(func() string {
		hs, err := outboxops.LogHolds(context.Background(), b.pool)
		return fmt.Sprintf("r-1 delivered %v, holds %+v (%v)", b.rec.sequencesOf()["r-1"], hs, err)
	}))
	require.Equal(t, []int64{1, 2, 3, 2, 3}, b.rec.sequencesOf()["r-1"])
	b.rec.mu.Lock()
	var replays []bool
	for _, e := range b.rec.acked {
		if e.AggregateID == "r-1" {
			replays = append(replays, e.Replay)
		}
	}
	b.rec.mu.Unlock()
	require.Equal(t, []bool{false, false, false, true, true}, replays)
}

// TestLogReplayWaitsForTheBatchInFlight is model/README.md's note 5: a
// replay's hold made while the reader publishes a batch it read before the
// replay (its view without the hold, so it publishes the order's later
// events) does not publish until that batch's advance, which the replay's
// epoch refuses: the order never has two publishes at once, and the
// reader reads the batch again with the hold and leaves the order to it.
func TestLogReplayWaitsForTheBatchInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ids, part := sameLogPartition(t, b.pool, "n", 1)
	enqueueLog(t, b.pool, testdb.Event(t, ids[0], "E1"), testdb.Event(t, ids[0], "E2"))
	r := b.newLogRelay(t, outbox.LogConfig{})
	first := takeAndRead(t, r, part, 2)
	r.PublishForTest(ctx, first)
	refused, err := r.AdvanceForTest(ctx, first)
	require.NoError(t, err)
	require.False(t, refused)

	enqueueLog(t, b.pool, testdb.Event(t, ids[0], "E3"))
	inFlight := readLog(t, r, part, 1)
	require.NoError(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", ids[0], 1))
	worked, err := r.HoldStepForTest(ctx, part)
	require.NoError(t, err)
	require.False(t, worked, "the replay's hold waits for the batch in flight")
	require.Len(t, b.rec.sequencesOf()[ids[0]], 2)

	r.PublishForTest(ctx, inFlight) // the stale view publishes E3
	refused, err = r.AdvanceForTest(ctx, inFlight)
	require.NoError(t, err)
	require.True(t, refused, "the replay armed the epoch")
	again := readLog(t, r, part, 1)
	r.PublishForTest(ctx, again) // the hold's now: skipped
	refused, err = r.AdvanceForTest(ctx, again)
	require.NoError(t, err)
	require.False(t, refused)
	require.Equal(t, []int64{1, 2, 3}, b.rec.sequencesOf()[ids[0]])

	for range 3 {
		worked, err := r.HoldStepForTest(ctx, part)
		require.NoError(t, err)
		require.True(t, worked)
	}
	require.Equal(t, []int64{1, 2, 3, 1, 2, 3}, b.rec.sequencesOf()[ids[0]])
	worked, err = r.HoldStepForTest(ctx, part)
	require.NoError(t, err)
	require.True(t, worked, "the release")
	require.Empty(t, logHolds(t, b.pool))
}

// TestLogIdleReadsWriteNothing: a partition's reader that finds no event
// writes nothing (its lease is renewed only when half of it is gone), its
// hold worker locks nothing while no hold is due, and a batch writes or
// locks no other partition's cursor row.
func TestLogIdleReadsWriteNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	versions := func() map[int]string {
		rows, err := b.pool.Query(ctx, `SELECT partition, xmin::text || '/' || xmax::text FROM outbox_log_cursors`)
		require.NoError(t, err)
		out := map[int]string{}
		for rows.Next() {
			var p int
			var x string
			require.NoError(t, rows.Scan(&p, &x))
			out[p] = x
		}
		require.NoError(t, rows.Err())
		return out
	}
	run(t, b.newLogRelay(t, outbox.LogConfig{}))
	eventually(t, 30*time.Second, func() bool {
		var owned int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox_log_cursors WHERE owner IS NOT NULL`).Scan(&owned))
		return owned == outbox.LogPartitions
	}, "every partition taken")
	before := versions()
	time.Sleep(time.Second) // ten safety polls of every partition
	require.Equal(t, before, versions(), "idle reads wrote nothing")

	ids, part := sameLogPartition(t, b.pool, "i", 1)
	enqueueLog(t, b.pool, testdb.Event(t, ids[0], "E1"))
	eventually(t, 30*time.Second, func() bool { return len(b.rec.ackedIDs()) == 1 }, "delivered")
	eventually(t, 30*time.Second, func() bool { _, pos, _, _ := logCursor(t, b.pool, part); return pos > 0 }, "advanced")
	after := versions()
	for p, x := range before {
		if p != part {
			require.Equal(t, x, after[p], "partition %d untouched", p)
		}
	}
}

// TestLogShutdownGivesThePartitionsBack: a relay that stops gracefully
// gives its leases back and leaves the registry, so another relay takes
// the partitions at once instead of after the lease, and delivers what
// comes next.
func TestLogShutdownGivesThePartitionsBack(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	owned := func() int {
		var n int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox_log_cursors WHERE owner IS NOT NULL`).Scan(&n))
		return n
	}
	long := outbox.RelayConfig{Lease: time.Hour, PublishTimeout: time.Second}
	stop := run(t, b.newLogRelay(t, outbox.LogConfig{RelayConfig: long}))
	eventually(t, 30*time.Second, func() bool { return owned() == outbox.LogPartitions }, "every partition taken")
	stop()
	require.Zero(t, owned(), "the leases given back")
	var registered int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox_log_relays`).Scan(&registered))
	require.Zero(t, registered, "the relay left the registry")

	run(t, b.newLogRelay(t, outbox.LogConfig{RelayConfig: long}))
	enqueueLog(t, b.pool, testdb.Event(t, "s-1", "E1"))
	eventually(t, 30*time.Second, func() bool { return len(b.rec.ackedIDs()) == 1 }, "the next relay delivers, an hour's lease notwithstanding")
}

// TestLogChurn: producers whose transactions overlap on shared orders (some
// take their xid long before their order's lock, some roll back), a
// publisher that fails now and then for the event's fault or the sink's,
// and relays stopped and started under them: every committed event is
// delivered, each order's first deliveries in sequence, and no hold is
// left once the failures stop.
func TestLogChurn(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	rnd := rand.New(rand.NewPCG(27, 1))
	failing := true
	b := setup(t, func(_ context.Context, e outbox.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if !failing {
			return nil
		}
		switch x := rnd.IntN(100); {
		case x < 5:
			return errors.New("the consumer rejected it this time")
		case x < 7:
			return outbox.SinkUnavailable(errors.New("connection reset"))
		}
		return nil
	})
	ctx := context.Background()
	const orders, producers, txs = 12, 3, 40
	var committed atomic.Int64
	var wg sync.WaitGroup
	for w := range producers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 2))
			for range txs {
				var evs []outbox.Event
				for range 1 + r.IntN(3) {
					evs = append(evs, testdb.Event(t, fmt.Sprintf("c-%d", r.IntN(orders)), "E"))
				}
				early, pause, abort := r.IntN(3) == 0, time.Duration(r.IntN(20))*time.Millisecond, r.IntN(8) == 0
				err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
					if early { // the xid first, the order's lock later: the gate's case
						if _, err := tx.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
							return err
						}
						time.Sleep(pause)
					}
					if _, err := logEnqueuer.Enqueue(ctx, tx, evs...); err != nil {
						return err
					}
					time.Sleep(pause)
					if abort {
						return errAbort
					}
					return nil
				})
				if errors.Is(err, errAbort) {
					continue
				}
				if !assert.NoError(t, err) {
					return
				}
				committed.Add(int64(len(evs)))
			}
		})
	}

	cfg := outbox.LogConfig{MaxPartitions: 8, RelayConfig: outbox.RelayConfig{
		Lease: time.Second, PublishTimeout: 200 * time.Millisecond, MaxAttempts: 1000, BatchSize: 5,
		BreakerThreshold: 3, ProbeBase: 10 * time.Millisecond, ProbeMax: 50 * time.Millisecond,
	}}
	relays := []func(){run(t, b.newLogRelay(t, cfg)), run(t, b.newLogRelay(t, cfg))}
	producing := make(chan struct{})
	go func() { wg.Wait(); close(producing) }()
	for i := 0; ; i++ {
		select {
		case <-producing:
		case <-time.After(150 * time.Millisecond):
			relays[i%2]() // a graceful stop, and a new relay in its place
			relays[i%2] = run(t, b.newLogRelay(t, cfg))
			continue
		}
		break
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	eventually(t, 60*time.Second, func() bool {
		return int64(len(b.rec.ackedIDs())) == committed.Load() && len(logHolds(t, b.pool)) == 0
	}, "every committed event delivered, no hold left")
	for id, got := range b.rec.firstPublishes() {
		require.Equal(t, seq(len(got)), got, "order %s: first deliveries in sequence", id)
	}
	var total int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox_log`).Scan(&total))
	require.Equal(t, committed.Load(), total)
	logUntouched(t, b.pool)
}

var errAbort = errors.New("the business change is rolled back")

// TestLogFailpointsKillTheReader: with log.after_read or log.before_advance
// set to error, a partition's reader dies there as its process would: no
// advance, no release, its tries left counted. Another relay takes the
// partition over once the lease expires and delivers everything in
// sequence (after before_advance, again).
func TestLogFailpointsKillTheReader(t *testing.T) {
	t.Parallel()
	for _, point := range []string{failpoints.LogAfterRead, failpoints.LogBeforeAdvance} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			ids, part := sameLogPartition(t, b.pool, "f", 1)
			fps, err := failpoints.Parse(point + "=error")
			require.NoError(t, err)
			lease := outbox.RelayConfig{Lease: time.Second, PublishTimeout: 200 * time.Millisecond}
			dying := lease
			// A take a minute apart: the dying relay does not take the
			// partition again (and die at its window of one) before the
			// test stops it.
			dying.Failpoints, dying.PollInterval = fps, time.Minute
			stop := run(t, b.newLogRelay(t, outbox.LogConfig{RelayConfig: dying}))
			enqueueLog(t, b.pool, testdb.Event(t, ids[0], "E1"), testdb.Event(t, ids[0], "E2"), testdb.Event(t, ids[0], "E3"))
			eventually(t, 30*time.Second, func() bool {
				_, _, _, tries := logCursor(t, b.pool, part)
				return tries == 1
			}, "the reader died in a batch")
			stop()
			_, pos, _, _ := logCursor(t, b.pool, part)
			require.Zero(t, pos, "no advance")
			if point == failpoints.LogAfterRead {
				require.Empty(t, b.rec.ackedIDs(), "nothing published")
			}

			run(t, b.newLogRelay(t, outbox.LogConfig{RelayConfig: lease}))
			eventually(t, 30*time.Second, func() bool {
				_, pos, _, tries := logCursor(t, b.pool, part)
				return len(b.rec.firstPublishes()[ids[0]]) == 3 && pos > 0 && tries == 0
			}, "taken over after the lease, delivered")
			require.Equal(t, seq(3), b.rec.firstPublishes()[ids[0]])
		})
	}
}

// TestLogHoldWorkerAsksForALease: with a lease whose idle renewals leave
// less than a publish needs part of the time, a held order's retries still
// go out: the hold worker asks the reader to renew instead of starting a
// publish its lease cannot cover.
func TestLogHoldWorkerAsksForALease(t *testing.T) {
	t.Parallel()
	// Failing for two seconds, retried every few milliseconds: the retries
	// fall in every phase of the one-second lease.
	until := time.Now().Add(2 * time.Second)
	b := setup(t, func(_ context.Context, e outbox.Event) error {
		if e.Sequence == 1 && time.Now().Before(until) {
			return errors.New("not yet")
		}
		return nil
	})
	run(t, b.newLogRelay(t, outbox.LogConfig{RelayConfig: outbox.RelayConfig{
		Lease: time.Second, PublishTimeout: 400 * time.Millisecond, PollInterval: time.Minute, MaxAttempts: 100,
	}}))
	enqueueLog(t, b.pool, testdb.Event(t, "l-1", "E1"), testdb.Event(t, "l-1", "E2"))
	eventually(t, 30*time.Second, func() bool {
		return len(b.rec.sequencesOf()["l-1"]) == 2 && len(logHolds(t, b.pool)) == 0
	}, "retried through the hold, the hold released")
	require.Equal(t, seq(2), b.rec.sequencesOf()["l-1"])
}

// TestLogRelaysShareThePartitions: relays share the partitions evenly,
// while events flow: a second relay started beside one that holds all
// sixteen gets eight of them; once it stops the first takes all back; with
// three, 6, 5 and 5. Every event is delivered exactly once (a partition is
// given back only after its batch advanced), each order in sequence.
func TestLogRelaysShareThePartitions(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	held := func() []int {
		rows, err := b.pool.Query(ctx, `
			SELECT count(*)::int FROM outbox_log_cursors
			WHERE lease_until >= now() GROUP BY owner ORDER BY 1`)
		require.NoError(t, err)
		n, err := pgx.CollectRows(rows, pgx.RowTo[int])
		require.NoError(t, err)
		return n
	}
	converged := func(want ...int) {
		t.Helper()
		eventually(t, 30*time.Second, func() bool { return slices.Equal(held(), want) }, fmt.Sprintf("the partitions held %v", want))
	}

	// Producers throughout: orders over every partition, one event a
	// transaction.
	const orders = 48
	var committed atomic.Int64
	producing, stopProducing := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; producing.Err() == nil; i++ {
				e := testdb.Event(t, fmt.Sprintf("s-%d", (i*2+w)%orders), "E")
				err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
					_, err := logEnqueuer.Enqueue(ctx, tx, e)
					return err
				})
				if !assert.NoError(t, err) {
					return
				}
				committed.Add(1)
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	defer func() { stopProducing(); wg.Wait() }()

	cfg := outbox.LogConfig{ShareDelay: 300 * time.Millisecond, RelayConfig: outbox.RelayConfig{Lease: 2 * time.Second, PublishTimeout: 200 * time.Millisecond}}
	reg := prometheus.NewRegistry()
	acfg := cfg
	acfg.Registerer = reg
	run(t, b.newLogRelay(t, acfg))
	converged(16)

	stopB := run(t, b.newLogRelay(t, cfg))
	converged(8, 8)
	require.Equal(t, 8.0, promtest.Value(t, reg, "outbox_log_partitions_held"))
	require.Equal(t, 8.0, promtest.Value(t, reg, "outbox_log_partition_share"))

	stopB()
	converged(16)

	run(t, b.newLogRelay(t, cfg))
	run(t, b.newLogRelay(t, cfg))
	converged(5, 5, 6)

	stopProducing()
	wg.Wait()
	eventually(t, 30*time.Second, func() bool { return int64(len(b.rec.ackedIDs())) == committed.Load() }, "every event delivered")
	for id, got := range b.rec.sequencesOf() {
		require.Equal(t, seq(len(got)), got, "order %s: delivered once each, in sequence", id)
	}
	logUntouched(t, b.pool)
}

// TestLogReplayPassesTheSkipped: a replay of an order over an event an
// operator skipped delivers the order's other events again and never the
// skipped one (only its tombstone, which this publisher, no
// SkipPublisher, does not take), as the poll source never replays a
// skipped event (issue 37:
// a skipped OrderCreated would start its saga); a replay from the skipped
// event itself starts at the order's next one.
func TestLogReplayPassesTheSkipped(t *testing.T) {
	t.Parallel()
	var poison sync.Map // event ID -> true while it fails
	b := setup(t, func(_ context.Context, e outbox.Event) error {
		if _, bad := poison.Load(e.ID); bad {
			return outbox.Permanent(errors.New("no route for this event"))
		}
		return nil
	})
	ctx := context.Background()
	evs := enqueueLog(t, b.pool, testdb.Event(t, "sk-1", "E1"), testdb.Event(t, "sk-1", "E2"), testdb.Event(t, "sk-1", "E3"))
	poison.Store(evs[1].ID, true)
	run(t, b.newLogRelay(t, outbox.LogConfig{}))
	eventually(t, 30*time.Second, func() bool {
		hs := logHolds(t, b.pool)
		return len(hs) == 1 && hs[0].Quarantined
	}, "sequence 2 quarantined")
	skipped, err := outboxops.SkipLogHold(ctx, b.pool, "order", "sk-1", "ops@test", "no route, ever")
	require.NoError(t, err)
	require.Equal(t, evs[1].ID, skipped)
	eventually(t, 30*time.Second, func() bool {
		return b.rec.ackedIDs()[evs[2].ID] == 1 && len(logHolds(t, b.pool)) == 0
	}, "sequence 3 delivered after the skip, the hold released")
	waitLogPublished(t, b.pool, evs[0].ID, evs[2].ID)
	// The publisher would take it now: only the skip keeps it out.
	poison.Delete(evs[1].ID)

	require.NoError(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", "sk-1", 1))
	eventually(t, 30*time.Second, func() bool {
		return b.rec.ackedIDs()[evs[2].ID] == 2 && len(logHolds(t, b.pool)) == 0
	}, "replayed, the replay's hold released")
	require.Equal(t, []int64{1, 3, 1, 3}, b.rec.sequencesOf()["sk-1"], "the skipped sequence 2 is never published")

	require.NoError(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", "sk-1", 2))
	eventually(t, 30*time.Second, func() bool {
		return b.rec.ackedIDs()[evs[2].ID] == 3 && len(logHolds(t, b.pool)) == 0
	}, "replayed from the skipped event, the replay's hold released")
	require.Equal(t, []int64{1, 3, 1, 3, 3}, b.rec.sequencesOf()["sk-1"])
	e, err := outboxops.LogEventByID(ctx, b.pool, evs[1].ID)
	require.NoError(t, err)
	require.Equal(t, "skipped", e.State())
}

// TestLogSkipOfARedelivery: the skip of a replay's quarantined head, an
// event delivered before the replay, gives up that redelivery only (issue
// 37): no skip is recorded in outbox_log_skips, the event stays published,
// the replay goes on with the order's next event, and a later replay
// delivers the event again.
func TestLogSkipOfARedelivery(t *testing.T) {
	t.Parallel()
	var refuse sync.Map // event ID -> its redeliveries fail
	b := setup(t, func(_ context.Context, e outbox.Event) error {
		if _, bad := refuse.Load(e.ID); bad && e.Replay {
			return outbox.Permanent(errors.New("its workflow type is gone"))
		}
		return nil
	})
	ctx := context.Background()
	evs := enqueueLog(t, b.pool, testdb.Event(t, "rd-1", "E1"), testdb.Event(t, "rd-1", "E2"))
	run(t, b.newLogRelay(t, outbox.LogConfig{}))
	waitLogPublished(t, b.pool, evs[0].ID, evs[1].ID)

	refuse.Store(evs[0].ID, true)
	require.NoError(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", "rd-1", 1))
	eventually(t, 30*time.Second, func() bool {
		hs := logHolds(t, b.pool)
		return len(hs) == 1 && hs[0].Quarantined
	}, "the redelivery of sequence 1 quarantined")
	require.True(t, logHolds(t, b.pool)[0].Replay)
	e, err := outboxops.LogEventByID(ctx, b.pool, evs[0].ID)
	require.NoError(t, err)
	require.True(t, e.Head)
	require.True(t, e.Redelivery, "the head is a redelivery")

	skipped, err := outboxops.SkipLogHold(ctx, b.pool, "order", "rd-1", "ops@test", "its workflow type is gone")
	require.NoError(t, err)
	require.Equal(t, evs[0].ID, skipped)
	eventually(t, 30*time.Second, func() bool {
		return b.rec.ackedIDs()[evs[1].ID] == 2 && len(logHolds(t, b.pool)) == 0
	}, "the replay went on with sequence 2, its hold released")
	e, err = outboxops.LogEventByID(ctx, b.pool, evs[0].ID)
	require.NoError(t, err)
	require.Equal(t, "published", e.State(), "delivered before the replay: a skip of its redelivery does not unpublish it")
	require.Nil(t, e.SkippedAt)
	var skips int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox_log_skips`).Scan(&skips))
	require.Zero(t, skips)

	refuse.Delete(evs[0].ID)
	require.NoError(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", "rd-1", 1))
	eventually(t, 30*time.Second, func() bool {
		return b.rec.ackedIDs()[evs[1].ID] == 3 && len(logHolds(t, b.pool)) == 0
	}, "replayed again")
	require.Equal(t, []int64{1, 2, 2, 1, 2}, b.rec.sequencesOf()["rd-1"], "a later replay delivers it again")
}

// TestLogFailureBeyondThePrefixCounts: an event that fails for its own
// fault while an earlier event of its batch (another order's) is left
// unfinished by a sink fault used an attempt (issue 37): when the batch is
// read again it is not published again, and its hold counts that attempt,
// here quarantined at once for a permanent failure.
func TestLogFailureBeyondThePrefixCounts(t *testing.T) {
	t.Parallel()
	var (
		first, second string
		sinkDown      atomic.Bool
		secondFailed  = make(chan struct{})
		once          sync.Once
	)
	sinkDown.Store(true)
	b := setup(t, func(ctx context.Context, e outbox.Event) error {
		switch {
		case e.AggregateID == second:
			once.Do(func() { close(secondFailed) })
			return outbox.Permanent(errors.New("no route for this event"))
		case e.AggregateID == first && sinkDown.Load():
			select { // the sink fails after the later event failed
			case <-secondFailed:
			case <-ctx.Done():
			}
			return outbox.SinkUnavailable(errors.New("connection refused"))
		}
		return nil
	})
	ctx := context.Background()
	ids, part := sameLogPartition(t, b.pool, "bp", 2)
	first, second = ids[0], ids[1]
	evs := enqueueLog(t, b.pool, testdb.Event(t, first, "E1"), testdb.Event(t, second, "E1"))
	r := b.newLogRelay(t, outbox.LogConfig{RelayConfig: outbox.RelayConfig{
		MaxInFlight: 2, BreakerThreshold: 100, MaxAttempts: 5, RetryBase: time.Minute, RetryMax: time.Minute,
	}})
	batch := takeAndRead(t, r, part, 2)
	require.Equal(t, first, batch.Events()[0].AggregateID)
	r.PublishForTest(ctx, batch)
	refused, err := r.AdvanceForTest(ctx, batch)
	require.NoError(t, err)
	require.False(t, refused)
	require.Empty(t, logHolds(t, b.pool), "beyond the prefix: no hold yet")
	require.Equal(t, 1, b.rec.callsFor(evs[1].ID))

	sinkDown.Store(false)
	again := readLog(t, r, part, 2)
	r.PublishForTest(ctx, again)
	refused, err = r.AdvanceForTest(ctx, again)
	require.NoError(t, err)
	require.False(t, refused)
	require.Equal(t, 1, b.rec.ackedIDs()[evs[0].ID])
	require.Equal(t, 1, b.rec.callsFor(evs[1].ID), "its failure counted: not published again")
	hs := logHolds(t, b.pool)
	require.Len(t, hs, 1)
	require.Equal(t, second, hs[0].AggregateID)
	require.True(t, hs[0].Quarantined, "a permanent failure is quarantined after its one attempt")
	require.Equal(t, 1, hs[0].Attempts)
	require.Contains(t, hs[0].LastError, "no route")
}

// TestLogHungPublishHoldsOnlyItsOrder: on the log source, the publish of
// one event always runs past PublishTimeout while the relay's other
// publishes are acknowledged (a steady stream of orders over every
// partition). Its order goes to a hold, quarantined after MaxAttempts, and
// the other orders of its partition flow on: the window of two holds the
// hung event and its successor, so they are read only once the cursor
// passed it.
func TestLogHungPublishHoldsOnlyItsOrder(t *testing.T) {
	t.Parallel()
	var hung sync.Map
	b := setup(t, func(ctx context.Context, e outbox.Event) error {
		if _, ok := hung.Load(e.ID); ok {
			return hangs(ctx)
		}
		return nil
	})
	ids, part := sameLogPartition(t, b.pool, "hung", 3)
	h := enqueueLog(t, b.pool, testdb.Event(t, ids[0], "Created"), testdb.Event(t, ids[0], "Cancelled"))
	hung.Store(h[0].ID, true)
	others := enqueueLog(t, b.pool, testdb.Event(t, ids[1], "Created"), testdb.Event(t, ids[2], "Created"))
	busyProducer(t, b.pool, logEnqueuer)
	run(t, b.newLogRelay(t, outbox.LogConfig{RelayConfig: outbox.RelayConfig{
		BatchSize: 2, Lease: 2 * time.Second, PublishTimeout: 200 * time.Millisecond, MaxAttempts: 2,
	}}))

	eventually(t, 30*time.Second, func() bool {
		acked := b.rec.ackedIDs()
		return acked[others[0].ID] > 0 && acked[others[1].ID] > 0
	}, "the partition's other orders flow on past the hung event")
	var hs []outboxops.HeldOrder
	eventually(t, 30*time.Second, func() bool {
		hs = logHolds(t, b.pool)
		return len(hs) == 1 && hs[0].Quarantined
	}, "the hung event's order is held, then quarantined: %v", stringer(func() string { return fmt.Sprintf("%+v", hs) }))
	require.Equal(t, ids[0], hs[0].AggregateID)
	require.Equal(t, part, hs[0].Partition)
	require.Equal(t, 2, hs[0].Attempts, "quarantined after MaxAttempts")
	require.Contains(t, hs[0].LastError, "ran out of time again while the sink acknowledged other publishes")
	require.Zero(t, b.rec.callsFor(h[1].ID), "its order's later event waits")
}
