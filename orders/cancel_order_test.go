package orders

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest"
)

func TestCancelOrderTwiceWritesOneEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, err := CreateOrder(b.ctx, b.pool, validParams())
	require.NoError(t, err)

	first, err := CancelOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.False(t, first.Replayed)
	require.Equal(t, int64(2), first.AggregateSequence)

	second, err := CancelOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.True(t, second.Replayed)
	second.Replayed = false
	require.Equal(t, first, second, "a repeated cancel returns the first cancel's body")
	require.Equal(t, rowCounts{Orders: 1, Events: 2, Sequences: 1}, b.counts(t))

	ev := outboxtest.RequireEnqueued(t, b.pool, outboxtest.Match{ID: first.EventID})
	p, err := DecodeOrderCancelled(ev.SchemaVersion, ev.Payload)
	require.NoError(t, err)
	require.Equal(t, created.EventID.String(), p.CreatedEventID, "the cancel names the saga it cancels")
}

func TestCancelOrderFromAnyStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, status := range []Status{StatusPaid, StatusConfirmed, StatusPaymentFailed} {
		created, err := CreateOrder(b.ctx, b.pool, validParams())
		require.NoError(t, err)
		_, err = b.pool.Exec(b.ctx, "UPDATE orders SET status = $2 WHERE id = $1", created.OrderID, status)
		require.NoError(t, err)
		res, err := CancelOrder(b.ctx, b.pool, created.OrderID)
		require.NoError(t, err, status)
		require.False(t, res.Replayed)
		o, err := GetOrder(b.ctx, b.pool, created.OrderID)
		require.NoError(t, err)
		require.Equal(t, status, o.Status, "the saga, not the request, makes an order cancelled")
		require.True(t, o.CancelRequested)
	}
}

func TestCancelOrderUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := CancelOrder(b.ctx, b.pool, uuid.New())
	require.ErrorIs(t, err, ErrOrderNotFound)
	require.Equal(t, rowCounts{}, b.counts(t))
}

// TestCancelOrderRollbackLeavesNothing is invariant 2 on the cancel path.
func TestCancelOrderRollbackLeavesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, err := CreateOrder(b.ctx, b.pool, validParams())
	require.NoError(t, err)
	before := b.counts(t)
	errForced := errors.New("forced rollback")
	err = pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := CancelOrderTx(b.ctx, tx, created.OrderID); err != nil {
			return err
		}
		return errForced
	})
	require.ErrorIs(t, err, errForced)
	require.Equal(t, before, b.counts(t))
	o, err := GetOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.Equal(t, StatusPending, o.Status)
	require.Nil(t, o.CancelEventID)

	// The sequence was not consumed: the real cancel gets 2.
	res, err := CancelOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.Equal(t, int64(2), res.AggregateSequence)
}

// TestCancelOrderAfterCleanup: retention cleanup deleted the first cancel's
// event; a repeated cancel still answers with the first cancel's result (the
// sequence is kept on the order) and writes nothing.
func TestCancelOrderAfterCleanup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, err := CreateOrder(b.ctx, b.pool, validParams())
	require.NoError(t, err)
	first, err := CancelOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	// What retention cleanup does to a published event.
	require.EqualValues(t, 1, outboxtest.DeleteEvents(t, b.pool, outboxtest.Match{ID: first.EventID}))
	before := b.counts(t)

	again, err := CancelOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	again.Replayed = false
	require.Equal(t, first, again)
	require.Equal(t, before, b.counts(t), "a repeated cancel writes nothing")
}

// TestCancelOrderLegacyPurgedEvent: an order cancelled before
// cancel_event_sequence existed, whose event cleanup deleted, still reports
// ErrCancelEventPurged (there is nothing left to answer with).
func TestCancelOrderLegacyPurgedEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, err := CreateOrder(b.ctx, b.pool, validParams())
	require.NoError(t, err)
	first, err := CancelOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, "UPDATE orders SET cancel_event_sequence = NULL WHERE id = $1", created.OrderID)
	require.NoError(t, err)
	legacy, err := CancelOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err, "the legacy path reads the sequence from the event row")
	require.Equal(t, first.AggregateSequence, legacy.AggregateSequence)

	require.EqualValues(t, 1, outboxtest.DeleteEvents(t, b.pool, outboxtest.Match{ID: first.EventID}))
	_, err = CancelOrder(b.ctx, b.pool, created.OrderID)
	require.ErrorIs(t, err, ErrCancelEventPurged)
}

// TestConcurrentCancelsAndCreates races 50 requests on one order (cancels,
// and retries of its creation with the same Idempotency-Key) next to fresh
// creates of other orders: the order's stream must be exactly 1..2 (created,
// cancelled once), every cancel must report the same event, and every other
// order's stream must be exactly 1.
func TestConcurrentCancelsAndCreates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const key = "race-order"
	first, err := CreateOrderIdempotent(b.ctx, b.pool, key, validParams())
	require.NoError(t, err)
	var created CreateOrderResult
	require.NoError(t, json.Unmarshal(first.Body, &created))

	const n = 50
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		cancels = make(chan CancelOrderResult, n)
		replays = make(chan StoredResponse, n)
		fresh   = make(chan CreateOrderResult, n)
		errs    = make(chan error, 2*n)
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			switch i % 3 {
			case 0:
				res, err := CancelOrder(b.ctx, b.pool, created.OrderID)
				errs <- err
				cancels <- res
			case 1:
				res, err := CreateOrderIdempotent(b.ctx, b.pool, key, validParams())
				errs <- err
				replays <- res
			case 2:
				res, err := CreateOrder(b.ctx, b.pool, validParams())
				errs <- err
				fresh <- res
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	close(cancels)
	close(replays)
	close(fresh)
	for err := range errs {
		require.NoError(t, err)
	}

	var cancelEvent uuid.UUID
	writers := 0
	for c := range cancels {
		if !c.Replayed {
			writers++
		}
		if cancelEvent == uuid.Nil {
			cancelEvent = c.EventID
		}
		require.Equal(t, cancelEvent, c.EventID, "every cancel reports the one cancel event")
		require.Equal(t, int64(2), c.AggregateSequence)
	}
	require.Equal(t, 1, writers, "exactly one cancel wrote an event")
	for r := range replays {
		require.True(t, r.Replayed)
		require.JSONEq(t, string(first.Body), string(r.Body))
	}

	o, err := GetOrder(b.ctx, b.pool, created.OrderID)
	require.NoError(t, err)
	require.Len(t, o.Events, 2)
	require.Equal(t, []string{EventOrderCreated, EventOrderCancelled}, []string{o.Events[0].EventType, o.Events[1].EventType})
	require.Equal(t, []int64{1, 2}, []int64{o.Events[0].AggregateSequence, o.Events[1].AggregateSequence})

	others := 0
	for f := range fresh {
		others++
		require.Equal(t, int64(1), f.AggregateSequence)
	}
	// Every aggregate's sequences are 1..N with no gap or duplicate, and
	// outbox_sequences agrees (no number was consumed by a rollback).
	lanes := map[string][]int64{} // aggregate → its sequences, in order
	for _, e := range outboxtest.Events(t, b.pool, outboxtest.Match{}) {
		lanes[e.AggregateID] = append(lanes[e.AggregateID], e.Sequence)
	}
	rows, err := b.pool.Query(b.ctx, `SELECT aggregate_id, last_sequence FROM outbox_sequences`)
	require.NoError(t, err)
	type allocated struct {
		ID   string
		Last int64
	}
	last, err := pgx.CollectRows(rows, pgx.RowToStructByPos[allocated])
	require.NoError(t, err)
	lastOf := map[string]int64{}
	for _, a := range last {
		lastOf[a.ID] = a.Last
	}
	require.Len(t, lanes, others+1)
	for id, seqs := range lanes {
		for i, seq := range seqs {
			require.Equal(t, int64(i+1), seq, id)
		}
		require.Equal(t, int64(len(seqs)), lastOf[id], id)
	}
	require.Equal(t, rowCounts{Orders: others + 1, Events: others + 2, Sequences: others + 1, Keys: 1}, b.counts(t))
}
