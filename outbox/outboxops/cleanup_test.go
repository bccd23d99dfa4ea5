package outboxops_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// seeded is a database with events and inbox rows in every state, old and new.
type seeded struct {
	oldPublished, oldSkipped, keep []uuid.UUID
	oldInbox, keepInbox            int
}

// seedForCleanup writes oldPublished published events 10 days old, and rows
// that must survive: two skipped 10 days ago (the record of an operator's
// decision), old but unpublished, quarantined, backing off, being replayed;
// recent published or skipped.
// Inbox rows: old ones of deleted events (go), old ones of a retained event
// and recent ones (stay).
func seedForCleanup(t *testing.T, pool *pgxpool.Pool, oldPublished int) seeded {
	t.Helper()
	ctx := context.Background()
	var s seeded
	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	for i := range oldPublished {
		e := testdb.Enqueue(t, pool, testdb.Event(t, fmt.Sprintf("old-%d", i), "One"))[0]
		s.oldPublished = append(s.oldPublished, e.ID)
	}
	exec(`UPDATE outbox_events SET occurred_at = now() - interval '11 days', published_at = now() - interval '10 days' WHERE event_id = ANY($1)`, s.oldPublished)
	for i := range 2 {
		e := testdb.Enqueue(t, pool, testdb.Event(t, fmt.Sprintf("skipped-%d", i), "One"))[0]
		s.oldSkipped = append(s.oldSkipped, e.ID)
	}
	exec(`UPDATE outbox_events SET occurred_at = now() - interval '11 days', quarantined_at = now() - interval '10 days',
	      skipped_at = now() - interval '10 days', skipped_by = 'ops', skip_reason = 'test' WHERE event_id = ANY($1)`, s.oldSkipped)

	keep := func(sql string) {
		e := testdb.Enqueue(t, pool, testdb.Event(t, "keep-"+uuid.NewString(), "One"))[0]
		s.keep = append(s.keep, e.ID)
		exec(sql, e.ID)
	}
	keep(`UPDATE outbox_events SET occurred_at = now() - interval '30 days' WHERE event_id = $1`)                                              // old, never published
	keep(`UPDATE outbox_events SET occurred_at = now() - interval '30 days', quarantined_at = now() - interval '29 days' WHERE event_id = $1`) // old quarantined
	keep(`UPDATE outbox_events SET occurred_at = now() - interval '30 days', attempt_count = 3, available_at = now() + interval '1 hour' WHERE event_id = $1`)
	keep(`UPDATE outbox_events SET occurred_at = now() - interval '30 days', replay_requested_at = now() WHERE event_id = $1`) // being replayed
	keep(`UPDATE outbox_events SET occurred_at = now() - interval '2 days', published_at = now() - interval '1 day' WHERE event_id = $1`)
	keep(`UPDATE outbox_events SET quarantined_at = now(), skipped_at = now() - interval '1 day', skipped_by = 'ops', skip_reason = 'recent' WHERE event_id = $1`)

	// Inbox: one row per old published event (goes with it), one for a
	// retained event and one recent (both stay).
	exec(`INSERT INTO processed_events (consumer_name, event_id, processed_at)
	      SELECT 'projection', id, now() - interval '10 days' FROM unnest($1::uuid[]) AS id`, s.oldPublished)
	s.oldInbox = len(s.oldPublished)
	exec(`INSERT INTO processed_events (consumer_name, event_id, processed_at) VALUES ('projection', $1, now() - interval '30 days')`, s.keep[0])
	exec(`INSERT INTO processed_events (consumer_name, event_id, processed_at) VALUES ('projection', $1, now())`, uuid.New())
	s.keepInbox = 2
	return s
}

func countRows(t *testing.T, pool *pgxpool.Pool, ids []uuid.UUID) (events, inbox int) {
	t.Helper()
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM outbox_events WHERE event_id = ANY($1)), (SELECT count(*) FROM processed_events)`, ids).
		Scan(&events, &inbox))
	return events, inbox
}

// TestCleanupDeletesOnlyOldPublished: in bounded batches, old published
// events and the inbox rows of deleted events go; unpublished, quarantined,
// skipped, backing-off and replayed events stay however old, and so do recent
// rows and the inbox rows of retained events.
func TestCleanupDeletesOnlyOldPublished(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	s := seedForCleanup(t, pool, 23)

	var batches []outboxops.CleanupBatch
	res, err := outboxops.Cleanup(ctx, pool, outboxops.CleanupOptions{
		Retention: 7 * 24 * time.Hour, BatchSize: 5,
		OnBatch: func(cb outboxops.CleanupBatch) { batches = append(batches, cb) },
	})
	require.NoError(t, err)
	require.Equal(t, int64(23), res.EventsDeleted)
	require.Equal(t, int64(23), res.InboxDeleted)
	for _, cb := range batches {
		require.LessOrEqual(t, cb.Deleted, int64(5), "batches are bounded")
	}
	require.Len(t, batches, 5+5, "23 events and 23 inbox rows in batches of 5")
	require.Equal(t, res.Batches, len(batches))

	gone, _ := countRows(t, pool, s.oldPublished)
	require.Zero(t, gone)
	kept, inbox := countRows(t, pool, append(s.keep, s.oldSkipped...))
	require.Equal(t, len(s.keep)+len(s.oldSkipped), kept, "nothing unpublished, quarantined, skipped or recent was deleted")
	require.Equal(t, s.keepInbox, inbox)

	// A second pass finds nothing.
	res, err = outboxops.Cleanup(ctx, pool, outboxops.CleanupOptions{Retention: 7 * 24 * time.Hour, BatchSize: 5})
	require.NoError(t, err)
	require.Zero(t, res.EventsDeleted+res.InboxDeleted)
}

// TestCleanupKeepsTheInboxAtLeastAsLongAsEvents: a shorter inbox retention
// is refused with advice, and a longer one keeps inbox rows the events'
// retention would have dropped.
func TestCleanupKeepsTheInboxAtLeastAsLongAsEvents(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	s := seedForCleanup(t, pool, 3)
	_, err := outboxops.Cleanup(ctx, pool, outboxops.CleanupOptions{Retention: 7 * 24 * time.Hour, InboxRetention: time.Hour})
	require.ErrorContains(t, err, "inbox retention 1h0m0s is shorter than the event retention")
	st, err := outboxops.Status(ctx, pool)
	require.NoError(t, err)
	require.Nil(t, st.CleanupHorizon, "a refused cleanup records no horizon")

	res, err := outboxops.Cleanup(ctx, pool, outboxops.CleanupOptions{Retention: 7 * 24 * time.Hour, InboxRetention: 20 * 24 * time.Hour})
	require.NoError(t, err)
	require.Equal(t, int64(3), res.EventsDeleted, "the three old published events; skipped ones stay")
	require.Zero(t, res.InboxDeleted, "inbox rows younger than the inbox retention stay")
	_, inbox := countRows(t, pool, nil)
	require.Equal(t, s.oldInbox+s.keepInbox, inbox)
}

// TestCleanupExclusiveRunsOneAtATime: while another session holds the
// cleanup lock, a scheduled pass does not run.
func TestCleanupExclusiveRunsOneAtATime(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	seedForCleanup(t, pool, 2)
	holder, err := pool.Acquire(ctx)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock(x'6f7574666c6f7743'::bigint)`)
	require.NoError(t, err)

	opts := outboxops.CleanupOptions{Retention: 7 * 24 * time.Hour}
	_, ran, err := outboxops.CleanupExclusive(ctx, pool, opts)
	require.NoError(t, err)
	require.False(t, ran, "another cleanup holds the lock")

	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock(x'6f7574666c6f7743'::bigint)`)
	require.NoError(t, err)
	holder.Release()
	res, ran, err := outboxops.CleanupExclusive(ctx, pool, opts)
	require.NoError(t, err)
	require.True(t, ran)
	require.Equal(t, int64(2), res.EventsDeleted, "the two old published events")
	_, ran, err = outboxops.CleanupExclusive(ctx, pool, opts)
	require.NoError(t, err)
	require.True(t, ran, "the lock was released after the pass")
}

// TestCleanupExclusiveKeepsTheLog: the one retention call a relay process
// schedules (the embedding guide's) covers the log too, whatever source the
// database records now or later: it makes the log's ranges ahead of its
// sequence, without which an enqueue to the log fails once the sequence
// passes the last range. Retention is one call on every source.
func TestCleanupExclusiveKeepsTheLog(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	_, err := outboxops.SetSource(ctx, pool, outboxops.SourceLog, "test", "the log's retention")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `SELECT setval('outbox_log_pos', 25000000)`)
	require.NoError(t, err)

	res, ran, err := outboxops.CleanupExclusive(ctx, pool, outboxops.CleanupOptions{Retention: 7 * 24 * time.Hour})
	require.NoError(t, err)
	require.True(t, ran)
	require.Positive(t, res.Log.Made, "the pass made the log's ranges ahead")
	r, err := outboxops.LogRangesOf(ctx, pool)
	require.NoError(t, err)
	require.EqualValues(t, 2, r.Ahead, "two ranges ahead of the log's sequence")
}
