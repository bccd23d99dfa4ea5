package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

func TestEnqueueAssignsConsecutiveSequences(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()

	var first, second []outbox.Event
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		first, err = outbox.Enqueue(ctx, tx, testdb.Event(t, "a", "One"), testdb.Event(t, "b", "One"), testdb.Event(t, "a", "Two"))
		return err
	}))
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		second, err = outbox.Enqueue(ctx, tx, testdb.Event(t, "a", "Three"))
		return err
	}))
	require.Equal(t, []int64{1, 1, 2}, []int64{first[0].Sequence, first[1].Sequence, first[2].Sequence})
	require.Equal(t, int64(3), second[0].Sequence)
	for _, e := range append(first, second...) {
		require.NotZero(t, e.ID)
		require.EqualValues(t, 7, e.ID.Version(), "uuid v7")
		require.False(t, e.OccurredAt.IsZero())
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM outbox_events WHERE published_at IS NULL").Scan(&n))
	require.Equal(t, 4, n)
}

// TestEnqueueTxIsEnqueueWithoutTheEvents: the common case's form writes the
// same rows, in the caller's transaction, and refuses what Enqueue refuses.
func TestEnqueueTxIsEnqueueWithoutTheEvents(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return outbox.EnqueueTx(ctx, tx, testdb.Event(t, "a", "One"), testdb.Event(t, "a", "Two"))
	}))
	rows, err := pool.Query(ctx, "SELECT aggregate_sequence FROM outbox_events WHERE aggregate_id = 'a' ORDER BY 1")
	require.NoError(t, err)
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, seqs)

	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return outbox.EnqueueTx(ctx, tx, outbox.Event{AggregateType: "a"})
	})
	require.Error(t, err, "an invalid event is refused")
}

func TestEnqueueRollbackLeavesNothing(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()
	errRollback := errors.New("forced rollback")
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := outbox.Enqueue(ctx, tx, testdb.Event(t, "a", "One")); err != nil {
			return err
		}
		return errRollback
	})
	require.ErrorIs(t, err, errRollback)
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM outbox_events").Scan(&n))
	require.Zero(t, n)
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM outbox_sequences").Scan(&n))
	require.Zero(t, n, "a rolled back enqueue must not consume a sequence")
}

func TestEnqueueRejectsInvalidEvents(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()
	valid := testdb.Event(t, "a", "One")
	cases := map[string]func(e *outbox.Event){
		"no aggregate type": func(e *outbox.Event) { e.AggregateType = "" },
		"no aggregate id":   func(e *outbox.Event) { e.AggregateID = "" },
		"no type":           func(e *outbox.Event) { e.Type = "" },
		"no version":        func(e *outbox.Event) { e.SchemaVersion = 0 },
		"bad payload":       func(e *outbox.Event) { e.Payload = []byte("{") },
	}
	for name, mutate := range cases {
		e := valid
		mutate(&e)
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := outbox.Enqueue(ctx, tx, e)
			return err
		})
		require.ErrorIs(t, err, outbox.ErrInvalidEvent, name)
	}
}

func TestEnqueueNotifiesOnlyOnCommit(t *testing.T) {
	t.Parallel()
	pool, url := testdb.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	listener, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer listener.Close(context.Background())
	_, err = listener.Exec(ctx, "LISTEN "+outbox.NotifyChannel)
	require.NoError(t, err)

	// A rolled back transaction sends nothing...
	_ = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, _ = outbox.Enqueue(ctx, tx, testdb.Event(t, "a", "One"))
		return errors.New("rollback")
	})
	// ...a committed one does; the first notification must be the committed one.
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := outbox.Enqueue(ctx, tx, testdb.Event(t, "b", "One"))
		return err
	}))
	n, err := listener.WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.NotifyChannel, n.Channel)
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	_, err = listener.WaitForNotification(short)
	require.Error(t, err, "exactly one notification expected: the rolled back transaction must not notify")
}

// TestEnqueueConcurrentIsGapFree runs many transactions on one aggregate at
// once: their sequences must be exactly 1..N.
func TestEnqueueConcurrentIsGapFree(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()
	const workers, each = 10, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				errs <- pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					_, err := outbox.Enqueue(ctx, tx, testdb.Event(t, "hot", fmt.Sprintf("E%d_%d", w, i)))
					return err
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	rows, err := pool.Query(ctx, "SELECT aggregate_sequence FROM outbox_events WHERE aggregate_id = 'hot' ORDER BY 1")
	require.NoError(t, err)
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	require.Len(t, seqs, workers*each)
	for i, s := range seqs {
		require.Equal(t, int64(i+1), s)
	}
}

// TestEnqueueBatchJoinsTheCallersRoundTrip queues the outbox statements onto
// the caller's own batch, next to a business statement.
func TestEnqueueBatchJoinsTheCallersRoundTrip(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		var one int
		b.Queue("SELECT 1").QueryRow(func(row pgx.Row) error { return row.Scan(&one) })
		q, err := outbox.EnqueueBatch(b, testdb.Event(t, "x", "One"), testdb.Event(t, "y", "One"), testdb.Event(t, "x", "Two"))
		require.NoError(t, err)
		_, err = q.Events()
		require.Error(t, err, "results are not known before the batch is sent")
		require.NoError(t, tx.SendBatch(ctx, b).Close())
		events, err := q.Events()
		require.NoError(t, err)
		require.Equal(t, 1, one)
		require.Equal(t, []int64{1, 1, 2}, []int64{events[0].Sequence, events[1].Sequence, events[2].Sequence})
		return nil
	}))
}

// payloadOf returns a JSON payload of exactly n bytes.
func payloadOf(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = 'x'
	}
	p[0], p[n-1] = '"', '"'
	return p
}

// TestEnqueueRefusesAPayloadNoSinkTakes: an event whose payload is over the
// enqueuer's limit (64 MiB by default: more than any sink takes) is refused
// with ErrPayloadTooLarge, naming its size and the limit, before anything
// is sent: nothing of the call is written, to outbox_events or to the
// log, and the caller's transaction goes on and commits. A payload at the
// limit (1024 bytes set) is written.
func TestEnqueueRefusesAPayloadNoSinkTakes(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()
	const limit = 1024
	type enqueueFunc func(tx pgx.Tx, events ...outbox.Event) ([]outbox.Event, error)
	through := func(q *outbox.Enqueuer) enqueueFunc {
		return func(tx pgx.Tx, events ...outbox.Event) ([]outbox.Event, error) { return q.Enqueue(ctx, tx, events...) }
	}
	batched := func(q *outbox.Enqueuer) enqueueFunc {
		return func(tx pgx.Tx, events ...outbox.Event) ([]outbox.Event, error) {
			b := &pgx.Batch{}
			queued, err := q.EnqueueBatch(b, events...)
			if err != nil {
				return nil, err
			}
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return nil, err
			}
			return queued.Events()
		}
	}
	for _, c := range []struct {
		name    string
		table   string
		limit   int
		enqueue enqueueFunc
	}{
		{"Enqueue", "outbox_events", outbox.MaxPayloadBytesDefault, func(tx pgx.Tx, events ...outbox.Event) ([]outbox.Event, error) {
			return outbox.Enqueue(ctx, tx, events...)
		}},
		{"Enqueuer-default", "outbox_events", outbox.MaxPayloadBytesDefault, through(outbox.NewEnqueuer(outbox.EnqueueConfig{}))},
		{"Enqueuer-log-default", "outbox_log", outbox.MaxPayloadBytesDefault, through(outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true}))},
		{"Enqueuer", "outbox_events", limit, through(outbox.NewEnqueuer(outbox.EnqueueConfig{MaxPayloadBytes: limit}))},
		{"Enqueuer-log", "outbox_log", limit, through(outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true, MaxPayloadBytes: limit}))},
		{"EnqueueBatch", "outbox_events", limit, batched(outbox.NewEnqueuer(outbox.EnqueueConfig{MaxPayloadBytes: limit}))},
		{"EnqueueBatch-log", "outbox_log", limit, batched(outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true, MaxPayloadBytes: limit}))},
	} {
		order := "too-large-" + c.name
		fits := testdb.Event(t, order, "Fits")
		fits.Payload = payloadOf(min(c.limit, limit)) // at the limit, or under the default's 64 MiB
		tooLarge := testdb.Event(t, order, "TooLarge")
		tooLarge.Payload = payloadOf(c.limit + 1)
		after := testdb.Event(t, order, "After")
		var written []outbox.Event
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := c.enqueue(tx, testdb.Event(t, order, "Before"), tooLarge)
			require.ErrorIs(t, err, outbox.ErrPayloadTooLarge, c.name)
			require.ErrorIs(t, err, outbox.ErrInvalidEvent, c.name)
			require.ErrorContains(t, err, fmt.Sprintf("%d bytes", c.limit+1), "%s: the error names the payload's size", c.name)
			require.ErrorContains(t, err, fmt.Sprintf("%d", c.limit), "%s: the error names the limit", c.name)
			require.ErrorContains(t, err, "TooLarge", "%s: the error names the event", c.name)
			// The transaction is not poisoned: the caller goes on in it.
			written, err = c.enqueue(tx, fits, after)
			return err
		}), c.name)
		require.Len(t, written, 2)
		var types []string
		rows, err := pool.Query(ctx, `SELECT event_type FROM `+c.table+` WHERE aggregate_id = $1 ORDER BY aggregate_sequence`, order)
		require.NoError(t, err)
		types, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.Equal(t, []string{"Fits", "After"}, types, "%s: nothing of the refused call is written, the rest of the transaction is", c.name)
		require.EqualValues(t, 1, written[0].Sequence, "%s: the refused call took no sequence", c.name)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := outbox.NewEnqueuer(outbox.EnqueueConfig{MaxPayloadBytes: -1}).Enqueue(ctx, tx, testdb.Event(t, "a", "One"))
		return err
	})
	require.ErrorContains(t, err, "EnqueueConfig.MaxPayloadBytes -1 is negative", "a negative limit is a mistake, said so")
}
