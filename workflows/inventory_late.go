package workflows

import (
	"encoding/json"

	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
)

// InventoryLateEventWorkflowName is the workflow type the inventory starts
// (its INVENTORY_CLOSED_WORKFLOW) for an event whose saga already closed,
// or was forgotten behind the namespace retention:
// above all the StockReleased of a release the saga or the cancel workflow
// made as the saga ended, which no saga waits for. Unset there, such an
// event is quarantined in the inventory's outbox for an operator.
const InventoryLateEventWorkflowName = "InventoryLateEventWorkflow"

// InventoryLateEventWorkflow records an inventory event that reached a
// closed saga (workflow ID = the event's ID, input its envelope): it logs
// it and completes. Nothing is left to do for any of them: a release's
// event confirms what its HTTP answer said; a reservation's answer that
// came after its saga stopped is released by the cancel workflow, and one
// after its saga gave up is refused by the inventory's tombstone.
func InventoryLateEventWorkflow(ctx workflow.Context, in handoff.EventInput) (activities.InventoryOutcome, error) {
	var o activities.InventoryOutcome
	// Decoding JSON is deterministic (see orderCreated).
	err := json.Unmarshal(in.Payload, &o) //workflowcheck:ignore
	if err != nil {
		workflow.GetLogger(ctx).Error("an inventory event after its saga closed, unreadable", "event_id", in.EventID, "error", err)
		return o, nil
	}
	workflow.GetLogger(ctx).Info("an inventory event after its saga closed",
		"event_id", in.EventID, "event_type", in.EventType, "order_id", o.OrderID, "saga", o.WorkflowID, "outcome", o.Outcome)
	return o, nil
}
