package outbox_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestEnqueueToTheLog: an Enqueuer with Log writes the events to outbox_log
// and nothing to outbox_events, with the sequences Enqueue gives, each
// order's positions in sequence order, the order's partition, and the
// gate: the transaction's own xid for a new order, never lower than the
// order's last gate after.
func TestEnqueueToTheLog(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()
	q := outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true})
	require.True(t, q.Config().Log)

	var xid int64
	var written []outbox.Event
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&xid); err != nil {
			return err
		}
		var err error
		written, err = q.Enqueue(ctx, tx, testdb.Event(t, "a", "One"), testdb.Event(t, "b", "One"), testdb.Event(t, "a", "Two"), testdb.Event(t, "a", "Three"))
		return err
	}))
	require.Equal(t, []int64{1, 1, 2, 3}, []int64{written[0].Sequence, written[1].Sequence, written[2].Sequence, written[3].Sequence})
	// A batch too, as the order service sends its insert with the events.
	b := &pgx.Batch{}
	queued, err := q.EnqueueBatch(b, testdb.Event(t, "a", "Four"))
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() }))
	later, err := queued.Events()
	require.NoError(t, err)
	require.EqualValues(t, 4, later[0].Sequence)

	type logRow struct {
		ID        string `db:"event_id"`
		Seq       int64  `db:"aggregate_sequence"`
		Gate      int64  `db:"gate"`
		Partition int    `db:"partition"`
		Want      int    `db:"want"`
	}
	rows, err := pool.Query(ctx, `SELECT event_id::text, aggregate_sequence, gate, partition, outbox_log_partition(aggregate_type, aggregate_id) AS want
		FROM outbox_log WHERE aggregate_id = 'a' ORDER BY pos`)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByName[logRow])
	require.NoError(t, err)
	require.Len(t, got, 4)
	for i, r := range got {
		require.EqualValues(t, i+1, r.Seq, "positions follow the sequence")
		require.Equal(t, r.Want, r.Partition)
		if i < 3 {
			require.Equal(t, xid, r.Gate, "a new order's gate is its transaction's xid")
		} else {
			require.Greater(t, r.Gate, xid, "a later transaction's own xid, above the last gate")
		}
	}
	var events int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox_events`).Scan(&events))
	require.Zero(t, events)

	// The zero Enqueuer is Enqueue.
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := (&outbox.Enqueuer{}).Enqueue(ctx, tx, testdb.Event(t, "c", "One"))
		return err
	}))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox_events`).Scan(&events))
	require.Equal(t, 1, events)
}
