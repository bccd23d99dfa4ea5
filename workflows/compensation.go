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
const StageCompensationFailed Stage = "compensation_failed"

// The compensations a CompensationFailure names ([CompensationFailure.Compensation],
// the tag "compensation" of [MetricCompensationFailures]).
const (
	// CompensationRefund: the charge was not refunded (or the cancel that
	// would refund it could not finish).
	CompensationRefund = "refund"
	// CompensationRelease: the order's stock reservation was not released
	// at the inventory service.
	CompensationRelease = "release"
)

// CompensationFailure is the details of a CompensationFailed error.
type CompensationFailure struct {
	// Compensation is what was not undone: [CompensationRefund] (the
	// default) or [CompensationRelease].
	Compensation    string `json:"compensation"`
	OrderID         string `json:"order_id"`
	PaymentIntentID string `json:"payment_intent_id"`
	Amount          int64  `json:"amount"`
	Error           string `json:"error"`
}

// compensationFailed makes a failed refund or release reach an operator:
// memo, metric (tagged with the compensation), log line, and the
// non-retryable error the workflow returns.
func compensationFailed(ctx workflow.Context, f CompensationFailure, cause error) error {
	f.Error = cause.Error()
	if f.Compensation == "" {
		f.Compensation = CompensationRefund
	}
	workflow.GetMetricsHandler(ctx).
		WithTags(map[string]string{"workflow_type": workflow.GetInfo(ctx).WorkflowType.Name, "compensation": f.Compensation}).
		Counter(MetricCompensationFailures).Inc(1)
	memo := map[string]any{
		"compensation":      "failed",
		"order_id":          f.OrderID,
		"payment_intent_id": f.PaymentIntentID,
		"error":             f.Error,
	}
	var msg string
	if f.Compensation == CompensationRelease {
		workflow.GetLogger(ctx).Error("COMPENSATION FAILED: the order's stock reservation was not released; "+
			"release it at the inventory (POST /reservations/{order_id}/release with the saga's release key) or fix the cause and reset this workflow",
			"order_id", f.OrderID, "compensation", f.Compensation, "error", f.Error)
		memo["compensation_step"] = CompensationRelease
		msg = fmt.Sprintf("compensation failed for order %s: its stock reservation was not released: %v", f.OrderID, cause)
	} else {
		workflow.GetLogger(ctx).Error("COMPENSATION FAILED: the order's charge was not refunded; "+
			"refund it at the provider or fix the cause and reset this workflow",
			"order_id", f.OrderID, "compensation", f.Compensation, "payment_intent_id", f.PaymentIntentID, "amount", f.Amount, "error", f.Error)
		msg = fmt.Sprintf("compensation failed for order %s: payment intent %s (%d) was not refunded: %v",
			f.OrderID, f.PaymentIntentID, f.Amount, cause)
	}
	if err := workflow.UpsertMemo(ctx, memo); err != nil {
		workflow.GetLogger(ctx).Error("could not set the compensation memo", "order_id", f.OrderID, "error", err)
	}
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeCompensationFailed, cause, f)
}

// isType reports whether err (from an activity future) carries an
// ApplicationError of type t.
func isType(err error, t string) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == t
}

// cancellation is what both ways of undoing an order's payment end with: the
// cancel workflow (an order cancel) and the saga's own compensation (a
// Temporal cancel of the saga).
type cancellation struct {
	orderID string
	// refund, when set, is the charge to refund first; its key derives from
	// the charge's event, so whoever asks, the provider makes one refund.
	refund *activities.RefundInput
	// eventID and sequence are the event whose projection step says
	// "cancelled".
	eventID  string
	sequence int64
	// stage reports progress to the caller's status query.
	stage func(Stage)
}

// errRefund marks a refund that failed for good: the caller's compensation
// failed, and it must say so (compensationFailed), not just fail.
type errRefund struct{ err error }

func (e errRefund) Error() string { return e.err.Error() }
func (e errRefund) Unwrap() error { return e.err }

// refundThenProjectCancelled makes the order's net charge zero and only then
// projects it cancelled: a refund that fails leaves the order as it was
// (paid or confirmed), so no one reads "cancelled" for money still taken.
// It returns the refund's id ("" without one) and the projection's result;
// a failed refund is an [errRefund], a failed projection its own error.
func refundThenProjectCancelled(ctx workflow.Context, c cancellation) (string, activities.ProjectOrderResult, error) {
	var refundID string
	if c.refund != nil {
		c.stage(StageRefunding)
		var rr activities.RefundResult
		if err := workflow.ExecuteActivity(refundOptions(ctx), a.RefundPayment, *c.refund).Get(ctx, &rr); err != nil {
			return "", activities.ProjectOrderResult{}, errRefund{err}
		}
		refundID = rr.RefundID
	}
	c.stage(StageProjecting)
	var pr activities.ProjectOrderResult
	err := workflow.ExecuteActivity(projectOptions(ctx), a.ProjectOrder, activities.ProjectOrderInput{
		EventID: c.eventID, OrderID: c.orderID, Step: activities.StepCancelled,
		Sequence: c.sequence, RefundID: refundID,
	}).Get(ctx, &pr)
	return refundID, pr, err
}
