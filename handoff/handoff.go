package handoff

import "github.com/outflow/outflow/outbox/temporalpub/wire"

// Workflow type names (docs/reference.md).
const (
	OrderCreatedWorkflowName   = "OrderCreatedWorkflow"
	OrderCancelledWorkflowName = "OrderCancelledWorkflow"
)

// DefaultTaskQueue is the workflows' task queue when OUTFLOW_TASK_QUEUE is
// unset.
const DefaultTaskQueue = "orders"

// SearchAttributeOrderID is the custom Keyword search attribute every
// workflow of an order carries (the order app's routes set it; the relay
// sets none of its own), so operators find an order's histories with
// OrderId="...".
const SearchAttributeOrderID = "OrderId"

// EventInput is the single input of every workflow the relay starts: the
// outbox event's envelope, with the payload left as JSON so the workflow can
// upcast older schema versions itself. It is the publisher's type
// (temporalpub.EventInput, defined in outbox/temporalpub/wire), which a
// service outside outflow takes without this package.
type EventInput = wire.EventInput

// Delivery kinds of [EventInput.Delivery] (the publisher's).
const (
	// DeliveryFirst: no earlier run of this event can exist.
	DeliveryFirst = wire.DeliveryFirst
	// DeliveryReplay: an operator's replay; an earlier run failed, was
	// terminated or cancelled, maybe after it charged.
	DeliveryReplay = wire.DeliveryReplay
)

// SignalCancel is the signal the cancel workflow sends to the order's
// payment saga (workflow ID = the OrderCreated event id) to stop it.
const SignalCancel = "cancel"

// SignalPaymentWebhook is the signal a payment saga receives a Stripe
// webhook of its order by: the relay delivers each PaymentWebhookReceived
// event (the order API's POST /webhooks/stripe) to the saga whose workflow
// id the event carries, its payload the event's envelope.
const SignalPaymentWebhook = "payment-webhook"

// PaymentWebhookLateWorkflowName is the workflow type started for a
// webhook whose saga already closed or is forgotten (the relay's
// ClosedWorkflow), so that no webhook is lost or left quarantined.
const PaymentWebhookLateWorkflowName = "PaymentWebhookLateWorkflow"

// QueryStatus is the query both workflows answer with their current state,
// for operators: `temporal workflow query --type status -w EVENT_ID`.
const QueryStatus = "status"

// CancelRequest is the payload of [SignalCancel].
type CancelRequest struct {
	// CancelEventID is the OrderCancelled event that asks for the stop.
	CancelEventID string `json:"cancel_event_id"`
	Reason        string `json:"reason,omitempty"`
}

// SagaOutcome is how a payment saga (OrderCreatedWorkflow) ended.
type SagaOutcome string

// Saga outcomes.
const (
	// SagaConfirmed: charged, confirmation sent, order confirmed.
	SagaConfirmed SagaOutcome = "confirmed"
	// SagaPaymentFailed: declined; payment_failed projected and emailed.
	SagaPaymentFailed SagaOutcome = "payment_failed"
	// SagaStopped: a cancel stopped the saga at a safe point; Charged says
	// whether money was taken (the cancel workflow refunds it).
	SagaStopped SagaOutcome = "stopped"
	// SagaCompensated: the saga itself was cancelled (a Temporal cancel, not
	// an order cancel) and refunded its own charge.
	SagaCompensated SagaOutcome = "compensated"
)

// SagaResult is the result of OrderCreatedWorkflow; the cancel workflow
// reads it to learn whether money was taken.
type SagaResult struct {
	OrderID         string      `json:"order_id"`
	Outcome         SagaOutcome `json:"outcome"`
	Charged         bool        `json:"charged"`
	PaymentIntentID string      `json:"payment_intent_id,omitempty"`
	Amount          int64       `json:"amount"`
	Currency        string      `json:"currency"`
	// Refunded: the saga refunded its charge itself (SagaCompensated).
	Refunded bool   `json:"refunded,omitempty"`
	RefundID string `json:"refund_id,omitempty"`
	// StockReserved: the saga asked the inventory for a reservation that it
	// did not release itself; whoever ends the order (the cancel workflow)
	// releases it. Release is idempotent, so a reservation that was in fact
	// never made costs one answered request.
	StockReserved bool `json:"stock_reserved,omitempty"`
	// Reason says why a saga failed its order without charging, when it was
	// not the card: "out_of_stock" (the inventory rejected the
	// reservation), "stock_not_confirmed" (no answer from the inventory
	// within its deadline) or "authentication_not_completed" (the customer
	// did not complete 3-D Secure in time; the PaymentIntent was canceled).
	Reason string `json:"reason,omitempty"`
}
