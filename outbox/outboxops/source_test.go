package outboxops_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// enqueueOne commits one event of aggregate agg with the plain
// outbox.Enqueue, which knows nothing of the source.
func enqueueOne(t *testing.T, pool *pgxpool.Pool, agg string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent("order", agg, "OrderCreated", 1, map[string]string{"order_id": agg})
	require.NoError(t, err)
	var out []outbox.Event
	require.NoError(t, pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		out, err = outbox.Enqueue(context.Background(), tx, e)
		return err
	}))
	return out[0]
}

// inLog reports whether the event is in the log (else it must be in
// outbox_events).
func inLog(t *testing.T, pool *pgxpool.Pool, e outbox.Event) bool {
	t.Helper()
	var inLog, inEvents bool
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT EXISTS (SELECT 1 FROM outbox_log WHERE event_id = $1), EXISTS (SELECT 1 FROM outbox_events WHERE event_id = $1)`, e.ID).
		Scan(&inLog, &inEvents))
	require.NotEqual(t, inLog, inEvents, "event %s is in exactly one table", e.ID)
	return inLog
}

// TestEnqueueFollowsTheRecordedSource: producers never know the source.
// The same outbox.Enqueue writes to outbox_events while the database's
// source is poll or cdc and to the log while it is log, and an order's
// sequence runs on across the change.
func TestEnqueueFollowsTheRecordedSource(t *testing.T) {
	ctx := context.Background()
	pool := testdb.Open(t, testdb.NewURLOn(t, testdb.Logical(t))) // the cdc source needs wal_level=logical

	st, err := outboxops.Source(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, outboxops.SourcePoll, st.Source, "a fresh database starts on poll")
	require.Equal(t, "migration", st.ChangedBy)

	first := enqueueOne(t, pool, "o-1")
	require.False(t, inLog(t, pool, first), "poll: outbox_events")

	c, err := outboxops.SetSource(ctx, pool, "LOG ", "ops@example.com", "faster drains")
	require.NoError(t, err)
	require.Equal(t, outboxops.SourcePoll, c.Previous)
	second := enqueueOne(t, pool, "o-1")
	require.True(t, inLog(t, pool, second), "log: the log")
	require.Equal(t, first.Sequence+1, second.Sequence, "the order's sequence runs across both tables")

	st, err = outboxops.Source(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, outboxops.SourceLog, st.Source)
	require.Equal(t, "ops@example.com", st.ChangedBy)
	require.Equal(t, "faster drains", st.Reason)
	require.EqualValues(t, 1, st.EventsPending, "the poll event is still to publish")
	require.EqualValues(t, 1, st.LogPending, "and the log's")

	_, err = outboxops.SetSource(ctx, pool, outboxops.SourceCDC, "ops@example.com", "")
	require.NoError(t, err)
	third := enqueueOne(t, pool, "o-1")
	require.False(t, inLog(t, pool, third), "cdc: outbox_events")
	require.Equal(t, second.Sequence+1, third.Sequence)
}

// TestSetSourceCDCNeedsLogicalWAL: on a server without wal_level=logical
// (the shared one: replica) a switch to cdc, which no relay could follow,
// is refused, says what to change, and changes nothing; nor does a switch
// on a database without the outbox's publication.
func TestSetSourceCDCNeedsLogicalWAL(t *testing.T) {
	ctx := context.Background()
	pool := setup(t)
	_, err := outboxops.SetSource(ctx, pool, outboxops.SourceCDC, "ops@example.com", "")
	require.ErrorIs(t, err, outboxops.ErrWALLevel)
	require.ErrorContains(t, err, "wal_level=replica")
	require.ErrorContains(t, err, "the source was not changed")
	st, err := outboxops.Source(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, outboxops.SourcePoll, st.Source)

	logical := testdb.Open(t, testdb.NewURLOn(t, testdb.Logical(t)))
	_, err = logical.Exec(ctx, `DROP PUBLICATION `+outboxops.CDCPublicationDefault)
	require.NoError(t, err)
	_, err = outboxops.SetSource(ctx, logical, outboxops.SourceCDC, "ops@example.com", "")
	require.ErrorContains(t, err, "the publication "+outboxops.CDCPublicationDefault+" does not exist")
	require.ErrorContains(t, err, "CREATE PUBLICATION")
	st, err = outboxops.Source(ctx, logical)
	require.NoError(t, err)
	require.Equal(t, outboxops.SourcePoll, st.Source)
}

// TestSetSourceRefusesWhatItDoesNotKnow: an unknown source or a missing
// actor changes nothing and says what to pass.
func TestSetSourceRefusesWhatItDoesNotKnow(t *testing.T) {
	ctx := context.Background()
	pool := setup(t)
	_, err := outboxops.SetSource(ctx, pool, "kafka", "ops", "")
	require.ErrorIs(t, err, outboxops.ErrSource)
	require.ErrorContains(t, err, "want poll")
	_, err = outboxops.SetSource(ctx, pool, "log", " ", "")
	require.ErrorContains(t, err, "needs an actor")
	st, err := outboxops.Source(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, outboxops.SourcePoll, st.Source)
}

// TestEnqueueReadTheSourceBeforeTheChange: a producer's transaction that
// wrote before an operator changed the source and commits after it keeps
// what it wrote where it wrote it; the next transaction follows the change.
func TestEnqueueReadTheSourceBeforeTheChange(t *testing.T) {
	ctx := context.Background()
	pool := setup(t)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	e, err := outbox.NewEvent("order", "o-2", "OrderCreated", 1, map[string]string{"order_id": "o-2"})
	require.NoError(t, err)
	late, err := outbox.Enqueue(ctx, tx, e)
	require.NoError(t, err)

	_, err = outboxops.SetSource(ctx, pool, outboxops.SourceLog, "ops", "")
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.False(t, inLog(t, pool, late[0]), "written before the change: outbox_events")
	next := enqueueOne(t, pool, "o-2")
	require.True(t, inLog(t, pool, next))
	require.Equal(t, late[0].Sequence+1, next.Sequence)
}
