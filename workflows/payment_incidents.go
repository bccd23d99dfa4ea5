package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/orders"
)

// incidentOf is the incident a payment webhook reports after the charge,
// one that needs an operator: [activities.IncidentDispute] for
// charge.dispute.created, [activities.IncidentRefundFailed] for a
// charge.refund.updated whose refund failed; "" for any other.
func incidentOf(w orders.PaymentWebhookReceived) string {
	switch {
	case w.Type == "charge.dispute.created":
		return activities.IncidentDispute
	case w.Type == "charge.refund.updated" && w.Status == "failed":
		return activities.IncidentRefundFailed
	}
	return ""
}

// recordIncident records the incident kind of the webhook w, event
// eventID, on the order ([activities.Activities.RecordPaymentIncident]:
// disputed or refund_failed, the dispute counted), idempotent by the event.
func recordIncident(ctx workflow.Context, eventID, kind string, w orders.PaymentWebhookReceived) (activities.PaymentIncidentResult, error) {
	var res activities.PaymentIncidentResult
	err := workflow.ExecuteActivity(projectOptions(ctx), a.RecordPaymentIncident, activities.PaymentIncidentInput{
		EventID: eventID, OrderID: w.OrderID, Kind: kind, StripeEventID: w.StripeEventID, ObjectID: w.ObjectID,
		PaymentIntentID: w.PaymentIntentID, Amount: w.Amount, Reason: w.FailureCode,
	}).Get(ctx, &res)
	return res, err
}

// lateRefundFailure is the compensation failure of a refund that failed
// after the provider accepted it, and its cause.
func lateRefundFailure(w orders.PaymentWebhookReceived) (CompensationFailure, error) {
	return CompensationFailure{Compensation: CompensationRefund, OrderID: w.OrderID, PaymentIntentID: w.PaymentIntentID, Amount: w.Amount},
		fmt.Errorf("refund %s failed after the provider accepted it (Stripe event %s): %s", w.ObjectID, w.StripeEventID, w.FailureCode)
}

// incident handles a webhook the saga received ([ChangePaymentIncidents]):
// a dispute or a failed refund is recorded on the order and reported; it
// says whether the webhook is a refund failure first recorded now, which
// the caller reports as a compensation failure. Before the change (and on
// replay of a run recorded before it) the webhook is only logged.
func (s *saga) incident(ctx workflow.Context, eventID string, w orders.PaymentWebhookReceived) (refundFailed bool, err error) {
	kind := incidentOf(w)
	if kind == "" {
		return false, nil
	}
	if s.getVersion(ctx, ChangePaymentIncidents, workflow.DefaultVersion, 1) < 1 {
		workflow.GetLogger(ctx).Info("a payment webhook that does not settle the charge", "order_id", s.order.OrderID,
			"stripe_event_id", w.StripeEventID, "type", w.Type)
		return false, nil
	}
	res, err := recordIncident(ctx, eventID, kind, w)
	if err != nil {
		return false, err
	}
	return res.First && kind == activities.IncidentRefundFailed, nil
}

// takeIncidents handles every webhook the saga received and has not read
// yet, as it closes ([ChangePaymentIncidents]): without it a dispute or a
// failed refund signalled to a running saga would end with the run,
// unread. It returns the first refund failure first recorded now, if any.
// Taking a signal issues no command, so runs recorded before the change
// replay as they were.
func (s *saga) takeIncidents(ctx workflow.Context) (*orders.PaymentWebhookReceived, error) {
	var failed *orders.PaymentWebhookReceived
	for {
		ev, ok := s.webhooks.ReceiveAsync()
		if !ok {
			return failed, nil
		}
		// Decoding JSON is deterministic (see orderCreated).
		w, err := orders.DecodePaymentWebhookReceived(ev.SchemaVersion, ev.Payload) //workflowcheck:ignore
		if err != nil {
			workflow.GetLogger(ctx).Error("a payment webhook the saga cannot read; ignored", "order_id", s.order.OrderID, "event_id", ev.EventID, "error", err)
			continue
		}
		rf, err := s.incident(ctx, ev.EventID, w)
		if err != nil {
			return failed, err
		}
		if rf && failed == nil {
			failed = &w
		}
	}
}

// reportLateRefund makes a refund that failed after it was accepted, learnt
// by a saga that goes on (or closes with its own result), reach an operator
// as a compensation failure does: memo, metric, log line, and the status
// query's last_error. The run's stage and result stay its own: the cancel
// workflow reads the result.
func (s *saga) reportLateRefund(ctx workflow.Context, w orders.PaymentWebhookReceived) {
	f, cause := lateRefundFailure(w)
	s.status.LastError = cause.Error()
	_ = compensationFailed(ctx, f, cause)
}

// closeIncidents runs takeIncidents as the saga closes with err, reporting
// a refund failure; a failure to record is the run's error unless it
// already has one.
func (s *saga) closeIncidents(ctx workflow.Context, err error) error {
	failed, ierr := s.takeIncidents(ctx)
	if failed != nil {
		s.reportLateRefund(ctx, *failed)
	}
	if err == nil {
		err = ierr
	}
	return err
}
