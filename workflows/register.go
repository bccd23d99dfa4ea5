package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/handoff"
)

// Register registers the workflows under their type names (docs/reference.md):
// the two sagas and the receivers of inventory events and payment webhooks
// for closed sagas.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(OrderCreatedWorkflow, workflow.RegisterOptions{Name: handoff.OrderCreatedWorkflowName})
	r.RegisterWorkflowWithOptions(OrderCancelledWorkflow, workflow.RegisterOptions{Name: handoff.OrderCancelledWorkflowName})
	r.RegisterWorkflowWithOptions(InventoryLateEventWorkflow, workflow.RegisterOptions{Name: InventoryLateEventWorkflowName})
	r.RegisterWorkflowWithOptions(PaymentWebhookLateWorkflow, workflow.RegisterOptions{Name: handoff.PaymentWebhookLateWorkflowName})
}
