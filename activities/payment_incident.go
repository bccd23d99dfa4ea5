package activities

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/activity"

	"github.com/outflow/outflow/orders"
)

// The incidents a payment webhook can report after the charge, which need
// an operator ([PaymentIncidentInput.Kind]).
const (
	// IncidentDispute: the customer disputed the charge
	// (charge.dispute.created); step [StepDisputed].
	IncidentDispute = "dispute"
	// IncidentRefundFailed: a refund the provider had accepted failed
	// (charge.refund.updated with status failed); step [StepRefundFailed].
	IncidentRefundFailed = "refund_failed"
)

// PaymentIncidentInput is one incident of one webhook's event.
type PaymentIncidentInput struct {
	// EventID is the PaymentWebhookReceived outbox event (the saga's signal,
	// or the late workflow's ID): with the step, the inbox key, so the
	// saga and a late workflow given the same event record it once.
	EventID string `json:"event_id"`
	OrderID string `json:"order_id"`
	// Kind is [IncidentDispute] or [IncidentRefundFailed].
	Kind string `json:"kind"`
	// StripeEventID, ObjectID (the dispute or refund), PaymentIntentID and
	// Reason (the dispute's reason, the refund's failure_reason) are the
	// webhook's, for the order row and the operator's log line.
	StripeEventID   string `json:"stripe_event_id"`
	ObjectID        string `json:"object_id,omitempty"`
	PaymentIntentID string `json:"payment_intent_id,omitempty"`
	Amount          int64  `json:"amount,omitempty"`
	Reason          string `json:"reason,omitempty"`
}

// PaymentIncidentResult says what recording the incident did.
type PaymentIncidentResult struct {
	// First: this is the first handling of the event — the step applied now,
	// or on an earlier attempt of this activity whose answer was lost. The
	// caller reports a first incident (a failed refund is a compensation
	// failure); a later one was handled by another workflow (a saga that
	// took the signal just before it closed, then the late workflow of its
	// re-delivery).
	First bool `json:"first"`
	// Status is the order's status.
	Status string `json:"status"`
}

// RecordPaymentIncident records a dispute or a late refund failure on the
// order (the projection steps disputed and refund_failed, through the
// inbox, idempotent by the event) and tells an operator: a first dispute is
// counted in outflow_disputes_total (alert PaymentDisputeOpened) and each
// first incident logged at error level with the order. A failed refund's
// metric is the workflow's (outflow_compensation_failures_total, through
// the worker's metrics handler), which reports it when First.
//
// The count is at least once: a retry of this activity after its commit
// finds the inbox row and still counts, because no earlier attempt got to
// say so. Only a handling by another workflow (attempt 1, a duplicate) is
// not counted again.
func (a *Activities) RecordPaymentIncident(ctx context.Context, in PaymentIncidentInput) (PaymentIncidentResult, error) {
	if a.DB == nil {
		return PaymentIncidentResult{}, errors.New("activities: no database configured (set DATABASE_URL)")
	}
	var step OrderStep
	switch in.Kind {
	case IncidentDispute:
		step = StepDisputed
	case IncidentRefundFailed:
		step = StepRefundFailed
	default:
		return PaymentIncidentResult{}, projectionError(fmt.Errorf("%w: unknown payment incident %q", orders.ErrIllegalTransition, in.Kind))
	}
	si, err := ProjectOrderInput{EventID: in.EventID, OrderID: in.OrderID, Step: step}.stepInput()
	if err != nil {
		return PaymentIncidentResult{}, err
	}
	if step == StepDisputed {
		si.DisputeID = in.ObjectID
	}
	res, err := orders.ApplyStep(ctx, a.DB, a.inbox(), si)
	if err != nil {
		return PaymentIncidentResult{}, projectionError(err)
	}
	retry := activity.IsActivity(ctx) && activity.GetInfo(ctx).Attempt > 1
	out := PaymentIncidentResult{First: res.Applied || (res.Duplicate && retry), Status: string(res.Status)}
	kv := []any{"order_id", in.OrderID, "event_id", in.EventID, "stripe_event_id", in.StripeEventID,
		"object", in.ObjectID, "payment_intent_id", in.PaymentIntentID, "amount", in.Amount, "reason", in.Reason, "status", out.Status}
	switch {
	case !out.First:
		logger(ctx).Info("payment incident already recorded by another run; not reported again", append(kv, "kind", in.Kind)...)
	case step == StepDisputed:
		a.metrics().Disputes.Inc()
		logger(ctx).Error("OPERATOR: a dispute was opened on the order's charge; answer it at the provider with the order's evidence (docs/operations.md#paymentdisputeopened)", kv...)
	default:
		logger(ctx).Error("OPERATOR: the order's refund failed after the provider accepted it; the customer has not been refunded (docs/operations.md#sagacompensationfailed)", kv...)
	}
	return out, nil
}
