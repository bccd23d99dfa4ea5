package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
)

func sagaResult(outcome handoff.SagaOutcome, charged bool) func(activities.AwaitSagaInput) (activities.AwaitSagaResult, error) {
	return func(in activities.AwaitSagaInput) (activities.AwaitSagaResult, error) {
		r := handoff.SagaResult{OrderID: testOrderID, Outcome: outcome, Charged: charged, Amount: testAmount, Currency: "usd"}
		if charged {
			r.PaymentIntentID = testPaymentIntent
		}
		return activities.AwaitSagaResult{Found: true, Result: r}, nil
	}
}

func refundOK(in activities.RefundInput) (activities.RefundResult, error) {
	return activities.RefundResult{RefundID: "re_1"}, nil
}

// expectSignal mocks the cancel signal to the saga; err is what the server
// answers (nil: delivered).
func expectSignal(h *harness, err error) {
	h.env.OnSignalExternalWorkflow(mock.Anything, testCreatedEvent, "", handoff.SignalCancel,
		handoff.CancelRequest{CancelEventID: testCancelEvent, Reason: "changed my mind"}).Return(err).Once()
}

func runCancel(t *testing.T, h *harness) CancelResult {
	t.Helper()
	h.env.ExecuteWorkflow(OrderCancelledWorkflow, cancelledInput(t))
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var res CancelResult
	require.NoError(t, h.env.GetWorkflowResult(&res))
	return res
}

// Cancel before the charge: the saga stopped without charging, so there is
// nothing to refund; cancelled and one cancellation email.
func TestCancelBeforeCharge(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{await: sagaResult(handoff.SagaStopped, false)})
	expectSignal(h, nil)

	res := runCancel(t, h)

	require.Equal(t, []string{"await", "project:cancelled", "email:cancellation"}, h.fx.list())
	require.False(t, res.Charged)
	require.False(t, res.Refunded)
	h.env.AssertExpectations(t)
}

// Cancel while the charge's outcome was unknown: the saga reconciled and
// reports the charge, which is refunded exactly once.
func TestCancelDuringUnknownOutcome(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{await: sagaResult(handoff.SagaStopped, true), refund: refundOK})
	expectSignal(h, nil)

	res := runCancel(t, h)

	require.Equal(t, []string{"await", "refund:pi_test_1:2500", "project:cancelled", "email:cancellation"}, h.fx.list())
	require.True(t, res.Refunded)
	require.Equal(t, "re_1", res.RefundID)
}

// Cancel after confirmation: the saga has closed (the signal finds no
// running workflow, which is fine), its result shows the charge, refunded
// exactly once with the charge's refund key.
func TestCancelAfterConfirmation(t *testing.T) {
	t.Parallel()
	var refunds []activities.RefundInput
	h := newHarness(t, fakes{
		await: sagaResult(handoff.SagaConfirmed, true),
		refund: func(in activities.RefundInput) (activities.RefundResult, error) {
			refunds = append(refunds, in)
			return refundOK(in)
		},
	})
	expectSignal(h, &temporal.UnknownExternalWorkflowExecutionError{})

	res := runCancel(t, h)

	require.Equal(t, []string{"await", "refund:pi_test_1:2500", "project:cancelled", "email:cancellation"}, h.fx.list())
	require.Len(t, refunds, 1)
	require.Equal(t, testCreatedEvent, refunds[0].ChargeEventID, "the refund key derives from the charge")
	require.True(t, res.Refunded)
}

// A saga that compensated itself already is not refunded again.
func TestCancelAfterSagaCompensatedItself(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{await: func(activities.AwaitSagaInput) (activities.AwaitSagaResult, error) {
		return activities.AwaitSagaResult{Found: true, Result: handoff.SagaResult{
			OrderID: testOrderID, Outcome: handoff.SagaCompensated, Charged: true,
			PaymentIntentID: testPaymentIntent, Refunded: true, RefundID: "re_saga",
		}}, nil
	}})
	expectSignal(h, &temporal.UnknownExternalWorkflowExecutionError{})

	res := runCancel(t, h)

	require.Equal(t, []string{"await", "project:cancelled", "email:cancellation"}, h.fx.list())
	require.Equal(t, "re_saga", res.RefundID)
}

// The saga ended without a result (terminated, failed, past retention): the
// provider is asked by search, the saga's event is closed, the found charge
// is refunded.
func TestCancelWhenSagaHasNoResult(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		await: func(activities.AwaitSagaInput) (activities.AwaitSagaResult, error) {
			return activities.AwaitSagaResult{Problem: "terminated"}, nil
		},
		reconcile: func(in activities.ReconcileInput) (activities.ReconcileResult, error) {
			require.True(t, in.FirstAttemptAt.IsZero(), "without the saga's timeline only a search is safe")
			require.Equal(t, testCreatedEvent, in.Charge.EventID)
			return activities.ReconcileResult{Outcome: activities.Charged, PaymentIntentID: testPaymentIntent, Amount: testAmount}, nil
		},
		refund: refundOK,
	})
	expectSignal(h, &temporal.UnknownExternalWorkflowExecutionError{})

	res := runCancel(t, h)

	require.Equal(t, []string{"await", "reconcile", "project:saga_stopped", "refund:pi_test_1:2500", "project:cancelled", "email:cancellation"}, h.fx.list())
	require.True(t, res.Refunded)
}

// A Temporal cancel of the cancel workflow itself does not skip the refund:
// it runs on a disconnected context.
func TestCancelWorkflowIgnoresTemporalCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{awaitDelay: time.Minute, await: sagaResult(handoff.SagaConfirmed, true), refund: refundOK})
	expectSignal(h, nil)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 30*time.Second)

	res := runCancel(t, h)

	require.Equal(t, []string{"await", "refund:pi_test_1:2500", "project:cancelled", "email:cancellation"}, h.fx.list())
	require.True(t, res.Refunded)
}

// The refund fails for good: the run fails with CompensationFailed naming
// the order and PaymentIntent, the metric counts it, the status query says
// so, and neither cancelled nor the cancellation email (which would claim a
// refund) goes out.
// The saga never finished while the cancel waited for it: whether money was
// taken is unknown, so nothing is refunded or mailed and the failure reaches
// an operator as a failed compensation.
func TestCancelWhenSagaNeverFinishesIsVisible(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		await: func(activities.AwaitSagaInput) (activities.AwaitSagaResult, error) {
			return activities.AwaitSagaResult{}, temporalAppError("saga still running", "SagaStillRunning", true)
		},
	})
	expectSignal(h, nil)

	h.env.ExecuteWorkflow(OrderCancelledWorkflow, cancelledInput(t))

	require.True(t, h.env.IsWorkflowCompleted())
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, h.env.GetWorkflowError(), &appErr)
	require.Equal(t, ErrTypeCompensationFailed, appErr.Type())
	require.True(t, appErr.NonRetryable())
	var details CompensationFailure
	require.NoError(t, appErr.Details(&details))
	require.Equal(t, testOrderID, details.OrderID)
	require.Contains(t, details.Error, "did not finish while the cancel waited")
	require.EqualValues(t, 1, h.metrics.count(MetricCompensationFailures))
	require.Equal(t, []string{"await"}, h.fx.list(), "nothing refunded, projected or mailed")
}

func TestCancelRefundFailureIsVisible(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		await: sagaResult(handoff.SagaConfirmed, true),
		refund: func(activities.RefundInput) (activities.RefundResult, error) {
			return activities.RefundResult{}, temporalAppError("charge is disputed", activities.ErrTypeRefundRejected, true)
		},
	})
	expectSignal(h, nil)

	h.env.ExecuteWorkflow(OrderCancelledWorkflow, cancelledInput(t))

	requireCompensationFailed(t, h)
	require.Equal(t, []string{"await", "refund:pi_test_1:2500"}, h.fx.list())
	v, err := h.env.QueryWorkflow(handoff.QueryStatus)
	require.NoError(t, err)
	var st CancelStatus
	require.NoError(t, v.Get(&st))
	require.Equal(t, StageCompensationFailed, st.Stage)
	require.Contains(t, st.LastError, "disputed")
}
