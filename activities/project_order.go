package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/failpoints"
)

// OrderStep is one status change the projection applies for an event: the
// orders package's [orders.Step], which holds the transition table. It is
// part of the workflow/activity protocol (recorded in Temporal histories).
type OrderStep = orders.Step

// Projection steps (see [orders.Step] for what each does).
const (
	StepPaid          = orders.StepPaid
	StepConfirmed     = orders.StepConfirmed
	StepPaymentFailed = orders.StepPaymentFailed
	StepSagaStopped   = orders.StepSagaStopped
	StepCancelled     = orders.StepCancelled
	StepDisputed      = orders.StepDisputed
	StepRefundFailed  = orders.StepRefundFailed
)

// ConsumerName is the inbox consumer of a step ([orders.ConsumerName]).
func ConsumerName(s OrderStep) string { return orders.ConsumerName(s) }

// ProjectOrderInput is one projection step of one event.
type ProjectOrderInput struct {
	EventID string    `json:"event_id"`
	OrderID string    `json:"order_id"`
	Step    OrderStep `json:"step"`
	// Sequence is the event's aggregate_sequence. Zero: the order row
	// supplies it, for the order's OrderCreated and OrderCancelled events
	// only (any other event is a non-retryable SequenceUnknown error).
	Sequence        int64  `json:"sequence"`
	PaymentIntentID string `json:"payment_intent_id,omitempty"`
	RefundID        string `json:"refund_id,omitempty"`
}

// ProjectOrderResult says what the step did.
type ProjectOrderResult struct {
	// Applied: this call changed the order.
	Applied bool `json:"applied"`
	// Duplicate: the inbox already held this (consumer, event); no effect.
	Duplicate bool `json:"duplicate,omitempty"`
	// Stale: the event's stream position was already closed by a final step;
	// acknowledged without effect.
	Stale bool `json:"stale,omitempty"`
	// Status is the order's status after the call.
	Status string `json:"status"`
	// CustomerEmail is the order's, for the emails that follow a step.
	CustomerEmail string `json:"customer_email"`
}

// ProjectOrder applies one status change of one event to the order with
// [orders.ApplyStep], in a transaction of its own: the inbox row
// ([inbox.Inbox.Record] on a.Inbox) and the change commit together, so a
// redelivered step is acknowledged without effect. The orders package owns the transition
// table, the inbox and the sequence rule; this activity turns its errors into
// the types the workflows act on:
//
//   - a step the order's status does not allow, or an unknown step, is a
//     non-retryable IllegalTransition; the former is also logged at error
//     level and counted in outflow_illegal_transitions_total{step};
//   - a step whose event is beyond the next one in sequence is a retryable
//     SequenceGap (an earlier event is still in flight);
//   - a missing order is a non-retryable OrderNotFound, and a step without a
//     sequence whose event the order row cannot place a non-retryable
//     SequenceUnknown.
//
// A duplicate is counted in inbox_duplicates_total{consumer} by the inbox.
// The consumer.after_commit failpoint runs after the commit.
func (a *Activities) ProjectOrder(ctx context.Context, in ProjectOrderInput) (ProjectOrderResult, error) {
	if a.DB == nil {
		return ProjectOrderResult{}, errors.New("activities: no database configured (set DATABASE_URL)")
	}
	step, err := in.stepInput()
	if err != nil {
		return ProjectOrderResult{}, err
	}
	res, err := orders.ApplyStep(ctx, a.DB, a.inbox(), step)
	var illegal *orders.IllegalTransitionError
	if errors.As(err, &illegal) {
		a.metrics().IllegalTransitions.WithLabelValues(string(in.Step)).Inc()
		logger(ctx).Error("illegal order transition refused: a step the order's status does not allow; investigate the run that sent it",
			"order_id", in.OrderID, "event_id", in.EventID, "step", string(in.Step), "status", string(illegal.Status), "sequence", in.Sequence)
	}
	if err != nil {
		return ProjectOrderResult{}, projectionError(err)
	}
	if res.Duplicate {
		consumer := ConsumerName(in.Step)
		if activity.IsActivity(ctx) {
			activity.GetLogger(ctx).Info("inbox duplicate acknowledged without effect", "consumer", consumer, "event_id", in.EventID, "order_id", in.OrderID)
		}
	}
	if err := a.failpoint(ctx, failpoints.ConsumerAfterCommit); err != nil {
		return ProjectOrderResult{}, err // the retry finds the inbox row
	}
	return ProjectOrderResult{
		Applied:       res.Applied,
		Duplicate:     res.Duplicate,
		Stale:         res.Stale,
		Status:        string(res.Status),
		CustomerEmail: res.CustomerEmail,
	}, nil
}

// stepInput is in as the orders package takes it. A malformed ID is a
// retryable error, as it was when PostgreSQL refused it: the workflows only
// pass the IDs of the order's own events.
func (in ProjectOrderInput) stepInput() (orders.StepInput, error) {
	orderID, err := uuid.Parse(in.OrderID)
	if err != nil {
		return orders.StepInput{}, fmt.Errorf("activities: project order %q: not an order id: %w", in.OrderID, err)
	}
	eventID, err := uuid.Parse(in.EventID)
	if err != nil {
		return orders.StepInput{}, fmt.Errorf("activities: project event %q of order %s: not an event id: %w", in.EventID, in.OrderID, err)
	}
	return orders.StepInput{OrderID: orderID, EventID: eventID, Step: in.Step, Sequence: in.Sequence,
		PaymentIntentID: in.PaymentIntentID, RefundID: in.RefundID}, nil
}

// logger is the activity's logger, or the process's default one when ctx is
// not an activity's (a direct call, as in tests).
func logger(ctx context.Context) log.Logger {
	if activity.IsActivity(ctx) {
		return activity.GetLogger(ctx)
	}
	return slog.Default()
}
