package orders

import (
	"time"

	"github.com/google/uuid"
)

// Status is an order's state. The order service writes pending; the
// workflows move an order through the others. A cancel request shows at once
// as CancelRequested; the status becomes cancelled when the cancel saga has
// made the net charge zero.
type Status string

// Order statuses (docs/reference.md). Final: confirmed, payment_failed, cancelled.
const (
	StatusPending       Status = "pending"
	StatusPaid          Status = "paid"
	StatusConfirmed     Status = "confirmed"
	StatusPaymentFailed Status = "payment_failed"
	StatusCancelled     Status = "cancelled"
)

// Order is an order as GET /orders/{id} shows it, with its event stream.
type Order struct {
	ID            uuid.UUID `json:"order_id" db:"id"`
	CustomerEmail string    `json:"customer_email" db:"customer_email"`
	Currency      string    `json:"currency" db:"currency"`
	PaymentMethod string    `json:"payment_method" db:"payment_method"`
	// Amount is the total in minor units, computed by the server.
	Amount int64  `json:"amount" db:"amount"`
	Items  []Item `json:"items" db:"items"`
	Status Status `json:"status" db:"status"`
	// PaymentIntentID is set once the payment activity has charged.
	PaymentIntentID *string `json:"payment_intent_id" db:"payment_intent_id"`
	// RefundID is set once a cancel has refunded a charge.
	RefundID *string `json:"refund_id" db:"refund_id"`
	// DisputedAt and DisputeID are set once the provider reported a
	// dispute on the order's charge (step disputed); RefundFailedAt once
	// its refund failed after being accepted (step refund_failed). Left out
	// of the JSON while unset.
	DisputedAt     *time.Time `json:"disputed_at,omitempty" db:"disputed_at"`
	DisputeID      *string    `json:"dispute_id,omitempty" db:"dispute_id"`
	RefundFailedAt *time.Time `json:"refund_failed_at,omitempty" db:"refund_failed_at"`
	// CreatedEventID is the OrderCreated event, also the payment saga's
	// workflow ID.
	CreatedEventID uuid.UUID `json:"created_event_id" db:"created_event_id"`
	// CancelEventID is the OrderCancelled event, once a cancel was requested.
	CancelEventID *uuid.UUID `json:"cancel_event_id" db:"cancel_event_id"`
	// CancelRequested is true from the accepted cancel on; Status follows
	// when the cancel saga has finished.
	CancelRequested bool `json:"cancel_requested" db:"-"`
	// ShippingAddress is where the order ships; nil (JSON null) for an order
	// placed without one.
	ShippingAddress *ShippingAddress `json:"shipping_address" db:"shipping_address"`
	CreatedAt       time.Time        `json:"created_at" db:"created_at"`
	UpdatedAt       time.Time        `json:"updated_at" db:"updated_at"`
	Events          []OrderEvent     `json:"events" db:"-"`
}

// OrderEvent is one outbox event of an order and its publication state, from
// [outbox.AggregateEvents].
type OrderEvent struct {
	EventID           uuid.UUID `json:"event_id"`
	EventType         string    `json:"event_type"`
	AggregateSequence int64     `json:"aggregate_sequence"`
	OccurredAt        time.Time `json:"occurred_at"`
	// PublishedAt is when the relay saw Temporal accept the workflow start;
	// nil while the event is pending.
	PublishedAt *time.Time `json:"published_at"`
	// WorkflowID is the Temporal workflow the event started: its event_id,
	// shown once published.
	WorkflowID *string `json:"workflow_id"`
}
