// Package routes says which workflow handles each of outflow's event types,
// and how the relay validates a payload before it starts one. It is the
// application's wiring of the relay library (outbox/temporalpub takes its
// routes from its caller), kept apart from the workflows so the relay binary
// links neither them nor their activities.
package routes

import (
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// Orders maps every event type the order service publishes to its
// workflow. An event type missing here has no workflow and is quarantined
// by the relay.
func Orders() map[string]temporalpub.Route {
	return map[string]temporalpub.Route{
		orders.EventOrderCreated: {
			Workflow: handoff.OrderCreatedWorkflowName,
			Validate: func(v int, p []byte) error { _, err := orders.DecodeOrderCreated(v, p); return err },
		},
		orders.EventOrderCancelled: {
			Workflow: handoff.OrderCancelledWorkflowName,
			Validate: func(v int, p []byte) error { _, err := orders.DecodeOrderCancelled(v, p); return err },
		},
	}
}
