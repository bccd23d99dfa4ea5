// Package routes says which workflow handles each of outflow's event types,
// with which search attributes, and how the relay validates a payload
// before it starts one. It is the application's wiring of the relay library
// (outbox/temporalpub takes its routes from its caller), kept apart from
// the workflows so the relay binary links neither them nor their
// activities.
package routes

import (
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// Orders maps every event type the order service publishes to its
// workflow, on the publisher's task queue (OUTFLOW_TASK_QUEUE). Every start
// carries the OrderId search attribute, the order's id, so operators find
// an order's histories with OrderId="..."; its namespace must have OrderId
// registered. An event type missing here has no workflow and is
// quarantined by the relay.
func Orders() temporalpub.Routes {
	return temporalpub.Routes{
		orders.EventOrderCreated: {
			Workflow:         handoff.OrderCreatedWorkflowName,
			Validate:         func(v int, p []byte) error { _, err := orders.DecodeOrderCreated(v, p); return err },
			SearchAttributes: orderID,
			Describe:         describeOrderCreated,
		},
		orders.EventOrderCancelled: {
			Workflow:         handoff.OrderCancelledWorkflowName,
			Validate:         func(v int, p []byte) error { _, err := orders.DecodeOrderCancelled(v, p); return err },
			SearchAttributes: orderID,
			Describe:         describeOrderCancelled,
		},
		// A Stripe webhook goes to the order's payment saga as a signal; one
		// whose saga closed, or was forgotten behind the namespace retention,
		// starts PaymentWebhookLateWorkflow instead. No Workflow: the route
		// only signals, because a saga started by a webhook would run from
		// an empty input (its own event, OrderCreated, starts it).
		orders.EventPaymentWebhookReceived: {
			Validate:         func(v int, p []byte) error { _, err := orders.DecodePaymentWebhookReceived(v, p); return err },
			SearchAttributes: orderID,
			Describe:         describePaymentWebhook,
			Signal:           handoff.SignalPaymentWebhook,
			WorkflowID:       sagaOfWebhook,
			ClosedWorkflow:   handoff.PaymentWebhookLateWorkflowName,
		},
	}
}

// sagaOfWebhook is the payment saga a webhook's event signals: its
// workflow id, which the order API looked up with the order.
func sagaOfWebhook(e outbox.Event) string {
	w, err := orders.DecodePaymentWebhookReceived(e.SchemaVersion, e.Payload)
	if err != nil { // Validate refused it first; unreachable
		return ""
	}
	return w.SagaWorkflowID
}

// describePaymentWebhook is what the Temporal UI shows for a late
// webhook's workflow: the order, the Stripe event and its object's status.
func describePaymentWebhook(e outbox.Event) (summary, details string) {
	w, err := orders.DecodePaymentWebhookReceived(e.SchemaVersion, e.Payload)
	if err != nil { // Validate accepted it; unreachable
		return "Stripe webhook of order " + e.AggregateID, ""
	}
	summary = fmt.Sprintf("Stripe %s of order %s", w.Type, w.OrderID)
	details = fmt.Sprintf("**Order** %s  \n**Stripe event** %s, %s %s, status %q  \n**Event** %s, %s v%d, sequence %d",
		w.OrderID, w.StripeEventID, w.ObjectType, w.ObjectID, w.Status, e.ID, e.Type, e.SchemaVersion, e.Sequence)
	return summary, details
}

// OrderIDKey is the typed key of the OrderId search attribute
// (handoff.SearchAttributeOrderID), for the code that sets it at a start:
// these routes, the benchmarks and the tests. The workflows, which read and
// upsert it, have their own from the same name (workflows/search_attributes.go).
var OrderIDKey = temporal.NewSearchAttributeKeyKeyword(handoff.SearchAttributeOrderID)

// orderID is the OrderId search attribute of an order's event: the order's
// id is the event's aggregate id.
func orderID(e outbox.Event) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(OrderIDKey.ValueSet(e.AggregateID))
}

// describeOrderCreated is what the Temporal UI shows for a payment saga:
// the order, its total and how many lines it has; never the customer's
// email, payment method or address. The saga keeps its current details
// (workflows.setDetails).
func describeOrderCreated(e outbox.Event) (summary, details string) {
	o, err := orders.DecodeOrderCreated(e.SchemaVersion, e.Payload)
	if err != nil { // Validate accepted it; unreachable
		return "Payment of order " + e.AggregateID, ""
	}
	total := orders.FormatAmount(o.Amount, o.Currency)
	summary = fmt.Sprintf("Payment of order %s: %s", o.OrderID, total)
	details = fmt.Sprintf("**Order** %s  \n**Total** %s (%d minor units), %d line(s)  \n**Event** %s, %s v%d, sequence %d",
		o.OrderID, total, o.Amount, len(o.Items), e.ID, e.Type, e.SchemaVersion, e.Sequence)
	return summary, details
}

// describeOrderCancelled is what the Temporal UI shows for a cancel: the
// order and the saga it stops; not the reason, which is free text.
func describeOrderCancelled(e outbox.Event) (summary, details string) {
	c, err := orders.DecodeOrderCancelled(e.SchemaVersion, e.Payload)
	if err != nil { // Validate accepted it; unreachable
		return "Cancel of order " + e.AggregateID, ""
	}
	summary = "Cancel of order " + c.OrderID
	details = fmt.Sprintf("**Order** %s  \n**Stops** the payment saga %s  \n**Event** %s, %s v%d, sequence %d",
		c.OrderID, c.CreatedEventID, e.ID, e.Type, e.SchemaVersion, e.Sequence)
	return summary, details
}
