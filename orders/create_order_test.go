package orders

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
)

// TestCreateOrderWritesOrderAndOneEvent is invariant 1 on the create path: a
// committed order has exactly one OrderCreated event, sequence 1, whose
// payload describes the order as stored.
func TestCreateOrderWritesOrderAndOneEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := validParams()
	p.Currency = "EUR"
	res, err := CreateOrder(b.ctx, b.pool, p)
	require.NoError(t, err)
	require.Equal(t, StatusPending, res.Status)
	require.Equal(t, int64(3000), res.Amount)
	require.Equal(t, "eur", res.Currency)
	require.Equal(t, int64(1), res.AggregateSequence)
	require.Equal(t, rowCounts{Orders: 1, Events: 1, Sequences: 1}, b.counts(t))

	var createdEventID uuid.UUID
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT created_event_id FROM orders WHERE id = $1`, res.OrderID).Scan(&createdEventID))
	require.Equal(t, res.EventID, createdEventID, "the order row records its OrderCreated event")
	ev := outboxtest.RequireEnqueued(t, b.pool, outboxtest.Match{ID: createdEventID})
	require.Equal(t, EventOrderCreated, ev.Type)
	require.Equal(t, AggregateType, ev.AggregateType)
	require.Equal(t, res.OrderID.String(), ev.AggregateID)
	created, err := DecodeOrderCreated(ev.SchemaVersion, ev.Payload)
	require.NoError(t, err)
	require.Equal(t, OrderCreated{
		OrderID: res.OrderID.String(), CustomerEmail: p.CustomerEmail, Currency: "eur",
		PaymentMethod: p.PaymentMethod, Amount: 3000, Items: p.Items,
	}, created)
}

// TestCreateOrderFailureLeavesNothing is invariant 2 on the create path:
// whatever makes the transaction fail, neither the order nor its event nor
// a consumed sequence number remains.
func TestCreateOrderFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("validation error", func(t *testing.T) {
		p := validParams()
		p.Items[0].Quantity = 0
		_, err := CreateOrder(b.ctx, b.pool, p)
		var verr *ValidationError
		require.ErrorAs(t, err, &verr)
		require.Equal(t, rowCounts{}, b.counts(t))
	})

	t.Run("tx func returns an error after the writes", func(t *testing.T) {
		errForced := errors.New("forced rollback")
		err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
			if _, err := CreateOrderTx(b.ctx, tx, validParams()); err != nil {
				return err
			}
			return errForced
		})
		require.ErrorIs(t, err, errForced)
		require.Equal(t, rowCounts{}, b.counts(t))
	})

	t.Run("constraint violation after the order row", func(t *testing.T) {
		// The outbox insert collides with an existing event id, after the
		// order row is already written in the same transaction.
		taken := uuid.Must(uuid.NewV7())
		require.NoError(t, pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
			e, err := outbox.NewEvent("other", "x", "Other", 1, map[string]string{})
			e.ID = taken
			if err == nil {
				_, err = outbox.Enqueue(b.ctx, tx, e)
			}
			return err
		}))
		before := b.counts(t)
		err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
			_, err := createOrderTx(b.ctx, tx, validParams(), orderIDs{order: uuid.Must(uuid.NewV7()), createdEvent: taken}, nil)
			return err
		})
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, "23505", pgErr.Code, "unique violation on outbox_events.event_id")
		require.Equal(t, before, b.counts(t), "the order row rolled back with the failed event")
		var n int
		require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM orders").Scan(&n))
		require.Zero(t, n)
	})

	t.Run("database check constraint", func(t *testing.T) {
		// Bypass validation to hit the schema's own guard on currency.
		before := b.counts(t)
		err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
			p := validParams()
			p.Currency = "USD"
			batch := &pgx.Batch{}
			var status Status
			require.NoError(t, queueInsertOrder(batch, orderIDs{order: uuid.New(), createdEvent: uuid.New()}, p, 1, &status))
			return tx.SendBatch(b.ctx, batch).Close()
		})
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, "23514", pgErr.Code)
		require.Equal(t, before, b.counts(t))
	})
}

// TestCreateOrderTxJoinsCallerTransaction shows the Tx form commits with the
// caller's own transaction.
func TestCreateOrderTxJoinsCallerTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var res CreateOrderResult
	require.NoError(t, pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		res, err = CreateOrderTx(b.ctx, tx, validParams())
		if err != nil {
			return err
		}
		// Not visible outside the transaction before COMMIT.
		var n int
		require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM orders").Scan(&n))
		require.Zero(t, n)
		return nil
	}))
	o, err := GetOrder(b.ctx, b.pool, res.OrderID)
	require.NoError(t, err)
	require.Len(t, o.Events, 1)
	items, err := json.Marshal(o.Items)
	require.NoError(t, err)
	require.JSONEq(t, `[{"sku":"SKU-1","quantity":2,"unit_amount":1250},{"sku":"mug.blue_XL","quantity":1,"unit_amount":500}]`, string(items))
}

// TestCreateOrderRecordsCreatedSequence: the order row keeps the sequence
// the outbox gave its OrderCreated event, so the projection can place the
// event after retention cleanup deleted it. A new order's event is always
// sequence 1, the column's default; should the outbox ever give another,
// it is written explicitly (forced here by a sequence row left behind).
func TestCreateOrderRecordsCreatedSequence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	createdSequence := func(id uuid.UUID) int64 {
		t.Helper()
		var seq int64
		require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT created_sequence FROM orders WHERE id = $1`, id).Scan(&seq))
		return seq
	}
	res, err := CreateOrder(b.ctx, b.pool, validParams())
	require.NoError(t, err)
	require.EqualValues(t, 1, res.AggregateSequence)
	require.EqualValues(t, 1, createdSequence(res.OrderID))

	ids, err := newOrderIDs()
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, `INSERT INTO outbox_sequences (aggregate_type, aggregate_id, last_sequence) VALUES ($1, $2, 4)`,
		AggregateType, ids.order.String())
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		res, err = createOrderTx(b.ctx, tx, validParams(), ids, nil)
		return err
	}))
	require.EqualValues(t, 5, res.AggregateSequence)
	require.EqualValues(t, 5, createdSequence(res.OrderID))
}
