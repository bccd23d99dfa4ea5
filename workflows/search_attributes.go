package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// OrderIDKey is the typed key of the OrderId search attribute.
var OrderIDKey = temporal.NewSearchAttributeKeyKeyword(SearchAttributeOrderID)

// setOrderID makes sure the run carries OrderId, so an operator finds every
// history of an order with OrderId="...". The relay sets it at start; a run
// started another way (an operator's `temporal workflow start`) gets it here.
func setOrderID(ctx workflow.Context, orderID string) error {
	if v, ok := workflow.GetTypedSearchAttributes(ctx).GetKeyword(OrderIDKey); ok && v == orderID {
		return nil
	}
	return workflow.UpsertTypedSearchAttributes(ctx, OrderIDKey.ValueSet(orderID))
}
