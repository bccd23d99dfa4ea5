package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/handoff"
)

// Register registers both workflows under their type names (docs/reference.md).
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(OrderCreatedWorkflow, workflow.RegisterOptions{Name: handoff.OrderCreatedWorkflowName})
	r.RegisterWorkflowWithOptions(OrderCancelledWorkflow, workflow.RegisterOptions{Name: handoff.OrderCancelledWorkflowName})
}
