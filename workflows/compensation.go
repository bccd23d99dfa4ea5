package workflows

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
)

// ErrTypeCompensationFailed is the ApplicationError type a workflow fails
// with when its refund failed for good (see the package doc).
const ErrTypeCompensationFailed = "CompensationFailed"

// MetricCompensationFailures counts compensation failures; alert on any
// increase. Emitted through the worker's metrics handler (replay-safe).
const MetricCompensationFailures = "outflow_compensation_failures_total"

// StageCompensationFailed is the "status" query's stage of a workflow whose
// compensation failed.
const StageCompensationFailed = "compensation_failed"

// CompensationFailure is the details of a CompensationFailed error.
type CompensationFailure struct {
	OrderID         string `json:"order_id"`
	PaymentIntentID string `json:"payment_intent_id"`
	Amount          int64  `json:"amount"`
	Error           string `json:"error"`
}

// compensationFailed makes a failed refund reach an operator: memo, metric,
// log line, and the non-retryable error the workflow returns.
func compensationFailed(ctx workflow.Context, f CompensationFailure, cause error) error {
	f.Error = cause.Error()
	workflow.GetMetricsHandler(ctx).
		WithTags(map[string]string{"workflow_type": workflow.GetInfo(ctx).WorkflowType.Name}).
		Counter(MetricCompensationFailures).Inc(1)
	workflow.GetLogger(ctx).Error("COMPENSATION FAILED: the order's charge was not refunded; "+
		"refund it at the provider or fix the cause and reset this workflow",
		"order_id", f.OrderID, "payment_intent_id", f.PaymentIntentID, "amount", f.Amount, "error", f.Error)
	if err := workflow.UpsertMemo(ctx, map[string]any{
		"compensation":      "failed",
		"order_id":          f.OrderID,
		"payment_intent_id": f.PaymentIntentID,
		"error":             f.Error,
	}); err != nil {
		workflow.GetLogger(ctx).Error("could not set the compensation memo", "order_id", f.OrderID, "error", err)
	}
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("compensation failed for order %s: payment intent %s (%d) was not refunded: %v",
			f.OrderID, f.PaymentIntentID, f.Amount, cause),
		ErrTypeCompensationFailed, cause, f)
}

// isType reports whether err (from an activity future) carries an
// ApplicationError of type t.
func isType(err error, t string) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == t
}

// a is the typed nil pointer workflows call activities through: the method
// value names the activity, no string can drift from the registration.
var a *activities.Activities
