package outbox_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// The log source's retention (RetainLog): model/log.pml's RETIRE rule
// against real PostgreSQL. The first range, outbox_log_r0, holds positions
// below outbox_log_range_width() (10,000,000); a test moves the sequence
// past it with setval instead of writing ten million events.

const logRangeWidth = 10_000_000

// retainLog runs one pass with retention and returns what it did.
func retainLog(t *testing.T, pool *pgxpool.Pool, retention time.Duration) outboxops.LogRetentionResult {
	t.Helper()
	res, err := outboxops.RetainLog(context.Background(), pool, outboxops.LogRetentionOptions{Retention: retention})
	require.NoError(t, err)
	return res
}

// retainUntilDropped runs passes until one drops the partition name: a
// sealed range waits for every transaction on the server that was open at
// its seal (other tests' too) to end.
func retainUntilDropped(t *testing.T, pool *pgxpool.Pool, retention time.Duration, name string) {
	t.Helper()
	eventually(t, 30*time.Second, func() bool {
		return slices.Contains(retainLog(t, pool, retention).Dropped, name)
	}, "%s dropped", name)
}

// passRange moves outbox_log_pos past the range that starts at lo.
func passRange(t *testing.T, pool *pgxpool.Pool, lo int64) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `SELECT setval('outbox_log_pos', $1)`, lo+logRangeWidth+5)
	require.NoError(t, err)
}

// ageSeals makes every sealed range look sealed two hours earlier.
func ageSeals(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `UPDATE outbox_log_ranges SET sealed_at = sealed_at - interval '2 hours' WHERE sealed_at IS NOT NULL`)
	require.NoError(t, err)
}

// rangeTable is whether the partition exists and is attached to outbox_log.
func rangeTable(t *testing.T, pool *pgxpool.Pool, name string) (exists, attached bool) {
	t.Helper()
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT to_regclass($1) IS NOT NULL, EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1))`, name).Scan(&exists, &attached))
	return exists, attached
}

// partitionOf names the partition an event's row lives in.
func partitionOf(t *testing.T, pool *pgxpool.Pool, e outbox.Event) string {
	t.Helper()
	var name string
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT tableoid::regclass::text FROM outbox_log WHERE event_id = $1`, e.ID).Scan(&name))
	return name
}

// TestLogRetentionKeepsRangesAhead: a fresh log has its legacy range and
// two ahead; a pass makes ranges as the sequence moves, so an enqueue
// always lands in a range of its own, and the gauge's ahead says so.
func TestLogRetentionKeepsRangesAhead(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	r, err := outboxops.LogRangesOf(ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, int64(3), r.Kept)
	require.Equal(t, int64(2), r.Ahead)
	require.Nil(t, r.Horizon)

	_, err = b.pool.Exec(ctx, `SELECT setval('outbox_log_pos', $1)`, int64(2*logRangeWidth+500))
	require.NoError(t, err)
	e := enqueueLog(t, b.pool, testdb.Event(t, "ahead-1", "E1"))
	require.Equal(t, "outbox_log_r2", partitionOf(t, b.pool, e[0]))
	r, err = outboxops.LogRangesOf(ctx, b.pool)
	require.NoError(t, err)
	require.Zero(t, r.Ahead, "the sequence is in the last range")

	res := retainLog(t, b.pool, 0)
	require.Equal(t, 2, res.Made)
	require.Equal(t, 2, res.Sealed, "r0 and r1 are behind the sequence")
	require.Empty(t, res.Dropped, "retention 0 drops nothing")
	r, err = outboxops.LogRangesOf(ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, int64(2), r.Ahead)
	require.Zero(t, retainLog(t, b.pool, 0).Made, "a second pass makes nothing")

	_, err = b.pool.Exec(ctx, `SELECT setval('outbox_log_pos', $1)`, int64(4*logRangeWidth+7))
	require.NoError(t, err)
	e = enqueueLog(t, b.pool, testdb.Event(t, "ahead-1", "E2"))
	require.Equal(t, "outbox_log_r4", partitionOf(t, b.pool, e[0]))
}

// TestLogEnqueuePastTheLastRangeSaysWhy: with no retention pass for too
// long, an enqueue past the last range fails with ErrLogNoRange, naming
// what makes the ranges, and writes nothing (the business write of its
// transaction neither); after a pass the same enqueue lands.
func TestLogEnqueuePastTheLastRangeSaysWhy(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `SELECT setval('outbox_log_pos', $1)`, int64(3*logRangeWidth))
	require.NoError(t, err)
	ev := testdb.Event(t, "past-the-end", "E1")
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE business_write (id int)`); err != nil {
			return err
		}
		_, err := logEnqueuer.Enqueue(ctx, tx, ev)
		return err
	})
	require.ErrorIs(t, err, outbox.ErrLogNoRange)
	require.Contains(t, err.Error(), "outboxctl cleanup")
	require.Equal(t, 1, strings.Count(err.Error(), outbox.ErrLogNoRange.Error()), "explained once: %v", err)
	var exists bool
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT to_regclass('business_write') IS NOT NULL`).Scan(&exists))
	require.False(t, exists, "the caller's transaction rolled back")
	n, err := outbox.AggregateEvents(ctx, b.pool, ev.AggregateType, ev.AggregateID)
	require.NoError(t, err)
	require.Empty(t, n, "nothing written")

	require.Positive(t, retainLog(t, b.pool, 0).Made, "the range the sequence reached and those ahead of it")
	e := enqueueLog(t, b.pool, testdb.Event(t, "past-the-end", "E1"))
	require.Equal(t, "outbox_log_r3", partitionOf(t, b.pool, e[0]))
}

// TestLogRetentionDropsOnlyWhatNoOneNeeds walks the rule's conditions one
// at a time on one range: it is kept while a writer that took a position
// in it is open, while it is younger than the retention, while a cursor is
// behind one of its rows in key order though past it in position order,
// while a hold owns one of its rows; then it is dropped, every event
// delivered in order before.
func TestLogRetentionDropsOnlyWhatNoOneNeeds(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	enqueueLog(t, b.pool, testdb.Event(t, "ret-1", "E1"), testdb.Event(t, "ret-1", "E2"))

	// A writer takes a position in r0 and stays open while the sequence
	// passes r0.
	writer, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer writer.Rollback(ctx) //nolint:errcheck // committed below
	_, err = logEnqueuer.Enqueue(ctx, writer, testdb.Event(t, "ret-2", "E1"))
	require.NoError(t, err)
	passRange(t, b.pool, 0)

	res := retainLog(t, b.pool, time.Hour)
	require.Equal(t, 1, res.Sealed)
	require.Zero(t, res.Retired, "younger than the retention")
	ageSeals(t, b.pool)
	require.Zero(t, retainLog(t, b.pool, time.Hour).Retired, "a writer that took a position in r0 is still open")

	// Committed, its event is in r0 and unread: the cursors keep r0.
	require.NoError(t, writer.Commit(ctx))
	require.Zero(t, retainLog(t, b.pool, time.Hour).Retired, "an event of r0 is after its partition's cursor")

	stop := run(t, b.newLogRelay(t, outbox.LogConfig{}))
	eventually(t, 30*time.Second, func() bool { return len(b.rec.ackedIDs()) == 3 }, "every event delivered")
	stop()
	require.Equal(t, map[string][]int64{"ret-1": {1, 2}, "ret-2": {1}}, b.rec.firstPublishes())

	// Key order, not position order: the partition of ret-1's last event
	// gets a cursor past r0 by position but before the event by gate.
	var part int
	var gate, pos int64
	require.NoError(t, b.pool.QueryRow(ctx,
		`SELECT partition, gate, pos FROM outbox_log WHERE aggregate_id = 'ret-1' ORDER BY gate DESC, pos DESC LIMIT 1`).Scan(&part, &gate, &pos))
	var cgate, cpos int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT gate, pos FROM outbox_log_cursors WHERE partition = $1`, part).Scan(&cgate, &cpos))
	_, err = b.pool.Exec(ctx, `UPDATE outbox_log_cursors SET gate = $2, pos = $3 WHERE partition = $1`, part, gate-1, int64(logRangeWidth+1))
	require.NoError(t, err)
	require.Zero(t, retainLog(t, b.pool, time.Hour).Retired, "(gate %d, pos %d) is after the cursor (gate %d, pos %d)", gate, pos, gate-1, logRangeWidth+1)
	_, err = b.pool.Exec(ctx, `UPDATE outbox_log_cursors SET gate = $2, pos = $3 WHERE partition = $1`, part, cgate, cpos)
	require.NoError(t, err)

	// A hold (an operator's replay) owns ret-1's events.
	require.NoError(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", "ret-1", 1))
	require.Zero(t, retainLog(t, b.pool, time.Hour).Retired, "a hold owns events of r0")
	_, err = b.pool.Exec(ctx, `DELETE FROM outbox_log_holds`)
	require.NoError(t, err)

	retainUntilDropped(t, b.pool, time.Hour, "outbox_log_r0")
	exists, _ := rangeTable(t, b.pool, "outbox_log_r0")
	require.False(t, exists)
	r, err := outboxops.LogRangesOf(ctx, b.pool)
	require.NoError(t, err)
	require.NotNil(t, r.Horizon)
	require.ErrorIs(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", "ret-1", 1), outboxops.ErrNoLogEvent, "its events are gone")

	// The log goes on in r1.
	b.rec = newRecorder(nil)
	enqueueLog(t, b.pool, testdb.Event(t, "ret-1", "E3"))
	run(t, b.newLogRelay(t, outbox.LogConfig{}))
	eventually(t, 30*time.Second, func() bool { return len(b.rec.ackedIDs()) == 1 }, "the next event delivered")
	require.Equal(t, map[string][]int64{"ret-1": {3}}, b.rec.firstPublishes())
	logUntouched(t, b.pool)
}

// retiringR0 makes r0 pass the rule but leaves it to the caller to crash
// in the middle of its drop: the pass's state as RetainLog's T3 leaves it.
func retiringR0(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	passRange(t, pool, 0)
	retainLog(t, pool, 0)
	_, err := pool.Exec(context.Background(), `UPDATE outbox_log_ranges SET retiring_at = now() WHERE lo = 0`)
	require.NoError(t, err)
}

// TestLogRetentionFinishesAnInterruptedDrop: a crash after the detach and
// before the drop, and a DETACH ... CONCURRENTLY killed while it waited
// (the partition left "detach pending"), are both finished by the next
// pass. A replay of an event in a retiring range is refused.
func TestLogRetentionFinishesAnInterruptedDrop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("detached, not dropped", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		retiringR0(t, b.pool)
		_, err := b.pool.Exec(ctx, `ALTER TABLE outbox_log DETACH PARTITION outbox_log_r0`)
		require.NoError(t, err)
		require.Equal(t, []string{"outbox_log_r0"}, retainLog(t, b.pool, time.Hour).Dropped)
		exists, _ := rangeTable(t, b.pool, "outbox_log_r0")
		require.False(t, exists)
	})
	t.Run("detach pending", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		enqueueLog(t, b.pool, testdb.Event(t, "pend-1", "E1"))
		retiringR0(t, b.pool)
		require.ErrorIs(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", "pend-1", 1), outboxops.ErrLogRangeRetiring, "r0 is retiring")

		// A reader's open transaction makes the detach wait in its second
		// transaction; the detaching session is killed there.
		reader, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		defer reader.Rollback(ctx) //nolint:errcheck // ended below
		_, err = reader.Exec(ctx, `SELECT count(*) FROM outbox_log`)
		require.NoError(t, err)
		detacher, err := pgx.Connect(ctx, b.url)
		require.NoError(t, err)
		var pid int
		require.NoError(t, detacher.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
		detached := make(chan error, 1)
		go func() {
			_, err := detacher.Exec(ctx, `ALTER TABLE outbox_log DETACH PARTITION outbox_log_r0 CONCURRENTLY`)
			detached <- err
		}()
		eventually(t, 30*time.Second, func() bool {
			var pending bool
			err := b.pool.QueryRow(ctx, `SELECT coalesce((SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = to_regclass('outbox_log_r0')), false)`).Scan(&pending)
			return err == nil && pending
		}, "the detach's first transaction committed")
		_, err = b.pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid)
		require.NoError(t, err)
		require.Error(t, <-detached, "the detaching session was killed")
		require.NoError(t, reader.Rollback(ctx))

		require.Equal(t, []string{"outbox_log_r0"}, retainLog(t, b.pool, time.Hour).Dropped, "FINALIZE, then the drop")
		exists, _ := rangeTable(t, b.pool, "outbox_log_r0")
		require.False(t, exists)
	})
}

// TestLogRetentionMigratesADefaultPartition: a database an earlier version
// left with events in outbox_log's DEFAULT partition keeps them, readable
// and delivered, in the legacy range outbox_log_r0, which is then retired
// by the same rule.
func TestLogRetentionMigratesADefaultPartition(t *testing.T) {
	t.Parallel()
	ctx, pool := emptyDB(t)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	store, err := database.NewStore(database.DialectPostgres, "outflow_schema_version")
	require.NoError(t, err)
	p, err := goose.NewProvider("", db, outbox.MigrationFilesForTest, goose.WithStore(store), goose.WithDisableGlobalRegistry(true))
	require.NoError(t, err)
	_, err = p.UpTo(ctx, 13)
	require.NoError(t, err)
	b := &testBundle{pool: pool, rec: newRecorder(nil)}
	old := enqueueLogAt13(t, pool, testdb.Event(t, "old-1", "E1"), testdb.Event(t, "old-1", "E2"))
	require.Equal(t, "outbox_log_default", partitionOf(t, pool, old[0]))
	_, err = pool.Exec(ctx, `SELECT setval('outbox_log_pos', $1)`, int64(3*logRangeWidth/2))
	require.NoError(t, err)
	late := enqueueLogAt13(t, pool, testdb.Event(t, "old-1", "E3"))

	require.NoError(t, outbox.Migrate(ctx, pool))
	for _, e := range append(old, late...) {
		require.Equal(t, "outbox_log_r0", partitionOf(t, pool, e), "the default partition's rows stay where they are")
	}
	var hi int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT hi FROM outbox_log_ranges WHERE name = 'outbox_log_r0'`).Scan(&hi))
	require.Equal(t, int64(2*logRangeWidth), hi, "up to the multiple of the width after the sequence")
	next := enqueueLog(t, pool, testdb.Event(t, "old-1", "E4"))
	require.Equal(t, "outbox_log_r0", partitionOf(t, pool, next[0]))

	run(t, b.newLogRelay(t, outbox.LogConfig{}))
	eventually(t, 30*time.Second, func() bool { return len(b.rec.ackedIDs()) == 4 }, "every event delivered")
	require.Equal(t, map[string][]int64{"old-1": {1, 2, 3, 4}}, b.rec.firstPublishes())

	passRange(t, pool, logRangeWidth)
	retainLog(t, pool, time.Hour)
	ageSeals(t, pool)
	retainUntilDropped(t, pool, time.Hour, "outbox_log_r0")
}

// enqueueLogAt13 writes events of one order to the log in one statement,
// as the version whose schema ended at migration 13 did: today's Enqueue
// also writes the trace context, a column that schema lacks (00019).
func enqueueLogAt13(t *testing.T, pool *pgxpool.Pool, events ...outbox.Event) []outbox.Event {
	t.Helper()
	args := pgx.NamedArgs{"aggregate_type": events[0].AggregateType, "aggregate_id": events[0].AggregateID}
	var ids []uuid.UUID
	var types, payloads []string
	var versions []int32
	for i := range events {
		if events[i].ID == uuid.Nil { // as Enqueue does
			events[i].ID = uuid.Must(uuid.NewV7())
		}
		e := events[i]
		require.Equal(t, events[0].AggregateID, e.AggregateID, "one order")
		ids, types, versions, payloads = append(ids, e.ID), append(types, e.Type), append(versions, int32(e.SchemaVersion)), append(payloads, string(e.Payload))
	}
	args["event_ids"], args["event_types"], args["schema_versions"], args["payloads"] = ids, types, versions, payloads
	_, err := pool.Exec(context.Background(), `
WITH seq AS (
    INSERT INTO outbox_sequences AS s (aggregate_type, aggregate_id, last_sequence, last_gate)
    VALUES (@aggregate_type, @aggregate_id, cardinality(@event_ids::uuid[]), pg_current_xact_id()::text::bigint)
    ON CONFLICT (aggregate_type, aggregate_id)
    DO UPDATE SET last_sequence = s.last_sequence + EXCLUDED.last_sequence,
                  last_gate     = greatest(s.last_gate, EXCLUDED.last_gate)
    RETURNING last_sequence, last_gate
)
INSERT INTO outbox_log (pos, gate, partition, event_id, aggregate_type, aggregate_id, aggregate_sequence,
                        event_type, schema_version, payload)
SELECT nextval('outbox_log_pos'), seq.last_gate, outbox_log_partition(@aggregate_type, @aggregate_id),
       e.event_id, @aggregate_type, @aggregate_id, seq.last_sequence - cardinality(@event_ids::uuid[]) + e.ord,
       e.event_type, e.schema_version, e.payload
FROM seq,
     unnest(@event_ids::uuid[], @event_types::text[], @schema_versions::int[], @payloads::jsonb[])
         WITH ORDINALITY AS e(event_id, event_type, schema_version, payload, ord)`, args)
	require.NoError(t, err)
	return events
}

// TestLogRetentionBesideALiveRelay: retention passes with a retention of
// a millisecond run over and over while a relay delivers and the log moves
// through five ranges: every event is delivered, each order in sequence,
// and the ranges behind are dropped meanwhile.
func TestLogRetentionBesideALiveRelay(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run(t, b.newLogRelay(t, outbox.LogConfig{RelayConfig: outbox.RelayConfig{BatchSize: 4}}))
	passes := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if _, err := outboxops.RetainLog(ctx, b.pool, outboxops.LogRetentionOptions{Retention: time.Millisecond}); err != nil && ctx.Err() == nil {
				passes <- err
				return
			}
		}
		passes <- nil
	}()

	const rounds, orders, perRound = 5, 4, 3
	for round := range rounds {
		var evs []outbox.Event
		for o := range orders {
			for range perRound {
				evs = append(evs, testdb.Event(t, "live-"+string(rune('a'+o)), "E"))
			}
		}
		enqueueLog(t, b.pool, evs...)
		// The next round's events go to the next range, once a pass has
		// made the one after it (the test jumps ten million positions at
		// once, faster than any pass interval).
		_, err := b.pool.Exec(context.Background(), `SELECT setval('outbox_log_pos', $1)`, int64(round+1)*logRangeWidth+1)
		require.NoError(t, err)
		eventually(t, 30*time.Second, func() bool {
			r, err := outboxops.LogRangesOf(context.Background(), b.pool)
			return err == nil && r.Ahead >= 1
		}, "a range ahead")
	}
	eventually(t, 60*time.Second, func() bool { return len(b.rec.ackedIDs()) == rounds*orders*perRound }, "every event delivered")
	eventually(t, 60*time.Second, func() bool {
		var dropped int
		require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_log_ranges WHERE dropped_at IS NOT NULL`).Scan(&dropped))
		return dropped >= rounds
	}, "the ranges behind dropped")
	cancel()
	require.NoError(t, <-passes)
	for id, got := range b.rec.firstPublishes() {
		require.Equal(t, seq(rounds*perRound), got, "order %s in sequence", id)
	}
}

// TestLogReplayRefusedWhileItsTailRetires: a replay of an order whose later
// event lies in a range retention is dropping is refused with
// ErrLogRangeRetiring, though its first event's range is kept, and nothing
// is replayed (issue 37): a replay that waited for retention's lock sees the
// range it marked, and one after the drop is refused too (the rows are
// gone). An order wholly after the range replays.
func TestLogReplayRefusedWhileItsTailRetires(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	head := enqueueLog(t, b.pool, testdb.Event(t, "tail-1", "E1"))
	require.Equal(t, "outbox_log_r0", partitionOf(t, b.pool, head[0]))
	passRange(t, b.pool, 0)
	tail := enqueueLog(t, b.pool, testdb.Event(t, "tail-1", "E2"))
	require.Equal(t, "outbox_log_r1", partitionOf(t, b.pool, tail[0]))
	passRange(t, b.pool, logRangeWidth)
	later := enqueueLog(t, b.pool, testdb.Event(t, "tail-2", "E1"))
	require.Equal(t, "outbox_log_r2", partitionOf(t, b.pool, later[0]))
	stop := run(t, b.newLogRelay(t, outbox.LogConfig{}))
	eventually(t, 30*time.Second, func() bool { return len(b.rec.ackedIDs()) == 3 }, "every event delivered")
	stop()
	require.Equal(t, 2, retainLog(t, b.pool, 0).Sealed, "r0 and r1 sealed")

	// Retention's T3 in flight: the cursors share-locked and r1 (not r0)
	// marked retiring, not committed yet.
	retire, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer retire.Rollback(ctx) //nolint:errcheck // committed below
	_, err = retire.Exec(ctx, `SELECT partition FROM outbox_log_cursors ORDER BY partition FOR SHARE`)
	require.NoError(t, err)
	_, err = retire.Exec(ctx, `UPDATE outbox_log_ranges SET retiring_at = now() WHERE lo = $1`, int64(logRangeWidth))
	require.NoError(t, err)
	replayed := make(chan error, 1)
	go func() { replayed <- outboxops.ReplayLogOrder(ctx, b.pool, "order", "tail-1", 1) }()
	eventually(t, 30*time.Second, func() bool {
		var waiting bool
		err := b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting)
		return err == nil && waiting
	}, "the replay waits for retention's lock")
	require.NoError(t, retire.Commit(ctx))
	err = <-replayed
	require.ErrorIs(t, err, outboxops.ErrLogRangeRetiring)
	require.Empty(t, logHolds(t, b.pool), "nothing replayed")

	retainUntilDropped(t, b.pool, time.Hour, "outbox_log_r1")
	require.ErrorIs(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", "tail-1", 1), outboxops.ErrLogRangeRetiring, "r1 dropped: sequence 2 is gone")
	require.Empty(t, logHolds(t, b.pool))

	require.NoError(t, outboxops.ReplayLogOrder(ctx, b.pool, "order", "tail-2", 1), "wholly after the dropped range")
	require.Len(t, logHolds(t, b.pool), 1)
}
