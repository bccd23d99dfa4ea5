package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
)

// PaymentWebhookLateWorkflow takes a Stripe webhook whose payment saga had
// already closed, or was forgotten behind the namespace retention (the
// relay starts it, workflow ID = the webhook's event ID, for a signal
// route's closed or missing target): a payment_intent.succeeded
// after the saga confirmed the order, say, which only repeats what the
// saga learnt by its own call. It records the webhook in its history and
// completes, so none is lost or left quarantined.
//
// Two outcomes need a person, because no saga is there to act on them
// ([ChangePaymentIncidents]): a dispute (charge.dispute.created) marks the
// order disputed and is counted in outflow_disputes_total (the activity
// RecordPaymentIncident; alert PaymentDisputeOpened), and a refund that
// failed after it was accepted (charge.refund.updated with status failed)
// marks the order refund_failed and fails this workflow CompensationFailed,
// exactly as a cancel whose refund the provider refused at once: memo,
// outflow_compensation_failures_total{compensation="refund"}, the log line.
// Both are recorded once per event: a saga that took the same event's
// signal just before it closed has already reported it, and this run then
// completes. Before the change both were only logged.
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
	kind := incidentOf(w)
	if kind == "" {
		logger.Info("a Stripe webhook after its saga closed", kv...)
		return w, nil
	}
	if workflow.GetVersion(ctx, ChangePaymentIncidents, workflow.DefaultVersion, 1) < 1 {
		if kind == activities.IncidentDispute {
			logger.Error("OPERATOR: a dispute was opened on an order whose saga closed", append(kv, "reason", w.FailureCode)...)
		} else {
			logger.Error("OPERATOR: a refund failed after it was accepted, on an order whose saga closed", append(kv, "reason", w.FailureCode)...)
		}
		return w, nil
	}
	res, err := recordIncident(ctx, in.EventID, kind, w)
	switch {
	case err != nil:
		return w, err
	case !res.First:
		logger.Info("a Stripe webhook after its saga closed, already handled by the saga", kv...)
		return w, nil
	case kind == activities.IncidentRefundFailed:
		f, cause := lateRefundFailure(w)
		return w, compensationFailed(ctx, f, cause)
	}
	return w, nil
}
