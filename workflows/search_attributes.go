package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/handoff"
)

// orderIDKey is the typed key of the OrderId search attribute
// (handoff.SearchAttributeOrderID). The relay's routes set it with
// internal/routes's; the workflows keep their own so that they do not link
// the relay's wiring.
var orderIDKey = temporal.NewSearchAttributeKeyKeyword(handoff.SearchAttributeOrderID)

// setOrderID makes sure the run carries OrderId, so an operator finds every
// history of an order with OrderId="...". The relay sets it at start; a run
// started another way (an operator's `temporal workflow start`) gets it here.
func setOrderID(ctx workflow.Context, orderID string) error {
	if v, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(orderIDKey); ok && v == orderID {
		return nil
	}
	return workflow.UpsertTypedSearchAttributes(ctx, orderIDKey.ValueSet(orderID))
}
