package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Register registers both workflows under their type names (docs/reference.md).
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(OrderCreatedWorkflow, workflow.RegisterOptions{Name: OrderCreatedWorkflowName})
	r.RegisterWorkflowWithOptions(OrderCancelledWorkflow, workflow.RegisterOptions{Name: OrderCancelledWorkflowName})
}
