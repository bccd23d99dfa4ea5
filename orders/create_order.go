package orders

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox"
)

// CreateOrderResult is the body of a 201 response to POST /orders.
type CreateOrderResult struct {
	OrderID  uuid.UUID `json:"order_id"`
	Status   Status    `json:"status"`
	Amount   int64     `json:"amount"`
	Currency string    `json:"currency"`
	// EventID is the OrderCreated event, also the payment saga's workflow ID.
	EventID           uuid.UUID `json:"event_id"`
	AggregateSequence int64     `json:"aggregate_sequence"`
}

// CreateOrder validates p and, in one transaction, inserts the order and
// enqueues its OrderCreated event. A *ValidationError means nothing was
// written.
func CreateOrder(ctx context.Context, db DB, p CreateOrderParams, opts ...Option) (CreateOrderResult, error) {
	o := collect(opts)
	var res CreateOrderResult
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		if res, err = CreateOrderTx(ctx, tx, p, opts...); err != nil {
			return err
		}
		return o.beforeCommit(ctx)
	})
	if err != nil {
		return CreateOrderResult{}, err
	}
	return res, nil
}

// CreateOrderTx is [CreateOrder] inside the caller's transaction: the order
// and its event commit or roll back with tx. Of opts, only [WithEnqueuer]
// applies.
func CreateOrderTx(ctx context.Context, tx pgx.Tx, p CreateOrderParams, opts ...Option) (CreateOrderResult, error) {
	ids, err := newOrderIDs()
	if err != nil {
		return CreateOrderResult{}, err
	}
	return createOrderTx(ctx, tx, p, ids, collect(opts).enqueuer)
}

// orderIDs are the IDs a new order needs before its first insert: the
// order's own and its OrderCreated event's, which the order row records.
type orderIDs struct {
	order, createdEvent uuid.UUID
}

func newOrderIDs() (orderIDs, error) {
	// UUIDv7 keeps both primary key indexes append-mostly.
	order, err := uuid.NewV7()
	if err != nil {
		return orderIDs{}, fmt.Errorf("orders: new order id: %w", err)
	}
	event, err := uuid.NewV7()
	if err != nil {
		return orderIDs{}, fmt.Errorf("orders: new event id: %w", err)
	}
	return orderIDs{order: order, createdEvent: event}, nil
}

func createOrderTx(ctx context.Context, tx pgx.Tx, p CreateOrderParams, ids orderIDs, q *outbox.Enqueuer) (CreateOrderResult, error) {
	p, amount, err := p.Validate()
	if err != nil {
		return CreateOrderResult{}, err
	}
	version, payload := EncodeOrderCreated(OrderCreated{
		OrderID:         ids.order.String(),
		CustomerEmail:   p.CustomerEmail,
		Currency:        p.Currency,
		PaymentMethod:   p.PaymentMethod,
		Amount:          amount,
		Items:           p.Items,
		ShippingAddress: p.ShippingAddress,
	})
	ev, err := outbox.NewEvent(AggregateType, ids.order.String(), EventOrderCreated, version, payload)
	if err != nil {
		return CreateOrderResult{}, err
	}
	ev.ID = ids.createdEvent
	// The request's trace goes with the event (EnqueueBatch has no context
	// to take it from): the workflow it starts continues that trace.
	ev.TraceContext = outbox.CaptureTraceContext(ctx, nil)
	// The order row and its event go to the server in one round trip, so the
	// outbox adds work on the server but no extra network wait.
	b := &pgx.Batch{}
	var status Status
	if err := queueInsertOrder(b, ids, p, amount, &status); err != nil {
		return CreateOrderResult{}, err
	}
	queued, err := q.EnqueueBatch(b, ev)
	if err != nil {
		return CreateOrderResult{}, fmt.Errorf("orders: enqueue OrderCreated of order %s: %w", ids.order, err)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return CreateOrderResult{}, fmt.Errorf("orders: create order %s: %w", ids.order, err)
	}
	out, err := queued.Events()
	if err != nil {
		return CreateOrderResult{}, fmt.Errorf("orders: enqueue OrderCreated of order %s: %w", ids.order, err)
	}
	// The order row keeps its event's sequence (the projection needs it
	// after retention cleanup). The column defaults to 1, what a new
	// order's first event always gets, so the write is only for a sequence
	// the outbox assigned otherwise and costs the usual path no round trip.
	if out[0].Sequence != defaultCreatedSequence {
		if _, err := qSetCreatedSequence.Exec(ctx, tx, createdSequenceArgs{ID: ids.order, CreatedSequence: out[0].Sequence}); err != nil {
			return CreateOrderResult{}, fmt.Errorf("orders: record the created sequence of order %s: %w", ids.order, err)
		}
	}
	return CreateOrderResult{
		OrderID:           ids.order,
		Status:            status,
		Amount:            amount,
		Currency:          p.Currency,
		EventID:           out[0].ID,
		AggregateSequence: out[0].Sequence,
	}, nil
}

// defaultCreatedSequence is orders.created_sequence's column default
// (migration 00007).
const defaultCreatedSequence = 1

// queueInsertOrder queues the orders row of a validated, normalized request
// onto b; status is set when the batch's results are read.
func queueInsertOrder(b *pgx.Batch, ids orderIDs, p CreateOrderParams, amount int64, status *Status) error {
	items, err := json.Marshal(p.Items)
	if err != nil {
		return fmt.Errorf("orders: marshal items: %w", err)
	}
	var q *pgx.QueuedQuery
	if p.ShippingAddress == nil {
		q = qInsertOrder.Queue(b, insertOrderArgs{ID: ids.order, CustomerEmail: p.CustomerEmail, Currency: p.Currency,
			PaymentMethod: p.PaymentMethod, Amount: amount, Items: items, CreatedEventID: ids.createdEvent})
	} else {
		addr, err := json.Marshal(p.ShippingAddress)
		if err != nil {
			return fmt.Errorf("orders: marshal shipping address: %w", err)
		}
		q = qInsertOrderWithShippingAddress.Queue(b, insertOrderShippingArgs{ID: ids.order, CustomerEmail: p.CustomerEmail,
			Currency: p.Currency, PaymentMethod: p.PaymentMethod, Amount: amount, Items: items,
			CreatedEventID: ids.createdEvent, ShippingAddress: addr})
	}
	q.QueryRow(func(row pgx.Row) error {
		if err := row.Scan(status); err != nil {
			return fmt.Errorf("orders: insert order %s: %w", ids.order, err)
		}
		return nil
	})
	return nil
}
