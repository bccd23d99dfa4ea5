// Package routes says which workflow handles each of outflow's event types,
// with which search attributes, and how the relay validates a payload
// before it starts one. It is the application's wiring of the relay library
// (outbox/temporalpub takes its routes from its caller), kept apart from
// the workflows so the relay binary links neither them nor their
// activities.
package routes

import (
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
		},
		orders.EventOrderCancelled: {
			Workflow:         handoff.OrderCancelledWorkflowName,
			Validate:         func(v int, p []byte) error { _, err := orders.DecodeOrderCancelled(v, p); return err },
			SearchAttributes: orderID,
		},
	}
}

// orderID is the OrderId search attribute of an order's event: the order's
// id is the event's aggregate id.
func orderID(e outbox.Event) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(handoff.OrderIDKey.ValueSet(e.AggregateID))
}
