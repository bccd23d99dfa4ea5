package workflows

import (
	"github.com/outflow/outflow/orders"
)

// Route says which workflow handles an event type and how to validate its
// payload before a workflow is started for it.
type Route struct {
	// Workflow is the workflow type name.
	Workflow string
	// Validate rejects a payload no workflow run could ever process; the relay
	// quarantines such an event at once instead of retrying it.
	Validate func(schemaVersion int, payload []byte) error
}

// Routes maps every event type outflow publishes to its workflow. An event
// type missing here has no workflow and is quarantined by the relay.
func Routes() map[string]Route {
	return map[string]Route{
		orders.EventOrderCreated: {
			Workflow: OrderCreatedWorkflowName,
			Validate: func(v int, p []byte) error { _, err := orders.DecodeOrderCreated(v, p); return err },
		},
		orders.EventOrderCancelled: {
			Workflow: OrderCancelledWorkflowName,
			Validate: func(v int, p []byte) error { _, err := orders.DecodeOrderCancelled(v, p); return err },
		},
	}
}
