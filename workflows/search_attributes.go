package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/handoff"
)

// setOrderID makes sure the run carries OrderId, so an operator finds every
// history of an order with OrderId="...". The relay sets it at start; a run
// started another way (an operator's `temporal workflow start`) gets it here.
func setOrderID(ctx workflow.Context, orderID string) error {
	if v, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(handoff.OrderIDKey); ok && v == orderID {
		return nil
	}
	return workflow.UpsertTypedSearchAttributes(ctx, handoff.OrderIDKey.ValueSet(orderID))
}
