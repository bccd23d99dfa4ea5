package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
)

// PaymentWebhookLateWorkflow takes a Stripe webhook whose payment saga had
// already closed (the relay starts it, workflow ID = the webhook's event
// ID, for a signal route's closed target): a payment_intent.succeeded
// after the saga confirmed the order, say, which only repeats what the
// saga learnt by its own call. It records the webhook in its history and
// completes, so none is lost or left quarantined. Two outcomes need a
// person, because no saga is there to act on them: a refund that failed
// after it was accepted (charge.refund.updated with status failed) and a
// dispute (charge.dispute.created); each is logged at error level, with the
// order, for an operator.
func PaymentWebhookLateWorkflow(ctx workflow.Context, in handoff.EventInput) (orders.PaymentWebhookReceived, error) {
	// Decoding JSON is deterministic (see orderCreated).
	w, err := orders.DecodePaymentWebhookReceived(in.SchemaVersion, in.Payload) //workflowcheck:ignore
	logger := workflow.GetLogger(ctx)
	if err != nil {
		logger.Error("a Stripe webhook after its saga closed, unreadable", "event_id", in.EventID, "error", err)
		return w, nil
	}
	kv := []any{"event_id", in.EventID, "stripe_event_id", w.StripeEventID, "type", w.Type, "order_id", w.OrderID,
		"saga", w.SagaWorkflowID, "object", w.ObjectID, "status", w.Status}
	switch {
	case w.Type == "charge.dispute.created":
		logger.Error("OPERATOR: a dispute was opened on an order whose saga closed", append(kv, "reason", w.FailureCode)...)
	case w.Type == "charge.refund.updated" && w.Status == "failed":
		logger.Error("OPERATOR: a refund failed after it was accepted, on an order whose saga closed", append(kv, "reason", w.FailureCode)...)
	default:
		logger.Info("a Stripe webhook after its saga closed", kv...)
	}
	return w, nil
}
