package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
)

// testAuthTimeout is the worker's PAYMENT_AUTHENTICATION_TIMEOUT in these
// tests, as the charge activity reports it.
const testAuthTimeout = 10 * time.Minute

// chargeRequiresAction answers the charge as the activity does for a card
// that needs 3-D Secure.
func chargeRequiresAction(int, activities.ChargeInput) (activities.ChargeResult, error) {
	return activities.ChargeResult{}, temporal.NewApplicationErrorWithOptions("payment intent "+testPaymentIntent+" requires the customer's authentication",
		activities.ErrTypePaymentOutcomeUnknown, temporal.ApplicationErrorOptions{NonRetryable: true,
			Details: []any{activities.PaymentProcessingDetails{PaymentIntentID: testPaymentIntent, Status: "requires_action", AuthenticationTimeout: testAuthTimeout}}})
}

// cancelAnswer answers CancelPayment with status, recording when it ran.
func cancelAnswer(h **harness, at *time.Time, status string) func(activities.CancelPaymentInput) (activities.CancelPaymentResult, error) {
	return func(in activities.CancelPaymentInput) (activities.CancelPaymentResult, error) {
		*at = (*h).env.Now()
		return activities.CancelPaymentResult{PaymentIntentID: in.PaymentIntentID, Status: status}, nil
	}
}

// The customer authenticates in time: the succeeded webhook charges, and a
// webhook of another PaymentIntent or the requires_action one do not end
// the wait. Nothing is canceled or reconciled.
func TestSagaThreeDSecureCompletedInTime(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{charge: chargeRequiresAction, inventory: inventoryOn, reserve: reserveAnswer(activities.InventoryReserved)})
	h.signalStockAt(inventoryEvent(t, testStockEvent, activities.InventoryEventReserved, activities.InventoryReserved, ""), time.Second)
	h.signalWebhookAt(webhookEvent(t, "aaaaaaaa-0000-4000-8000-000000000011", "evt_ra", "payment_intent.requires_action", testPaymentIntent), 2*time.Second)
	h.signalWebhookAt(webhookEvent(t, "aaaaaaaa-0000-4000-8000-000000000012", "evt_other", "payment_intent.succeeded", "pi_other"), time.Minute)
	h.signalWebhookAt(webhookEvent(t, "aaaaaaaa-0000-4000-8000-000000000013", "evt_ok", "payment_intent.succeeded", testPaymentIntent), 9*time.Minute)
	var stage Stage
	h.env.RegisterDelayedCallback(func() { stage = h.sagaStatus().Stage }, 5*time.Minute)

	res := runSaga(t, h, "pm_card_authenticationRequired")

	require.Equal(t, StageAwaitingAuthentication, stage)
	require.Equal(t, []string{"reserve", "charge", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.True(t, res.Charged)
	require.Equal(t, testPaymentIntent, res.PaymentIntentID)
	require.Empty(t, res.Reason)
}

// The customer's authentication fails: payment_intent.payment_failed
// declines, the stock is released, nothing is canceled.
func TestSagaThreeDSecureFailed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{charge: chargeRequiresAction, inventory: inventoryOn, reserve: reserveAnswer(activities.InventoryReserved), release: releaseOK})
	h.signalStockAt(inventoryEvent(t, testStockEvent, activities.InventoryEventReserved, activities.InventoryReserved, ""), time.Second)
	h.signalWebhookAt(webhookEvent(t, "aaaaaaaa-0000-4000-8000-000000000014", "evt_no", "payment_intent.payment_failed", testPaymentIntent), 3*time.Minute)

	res := runSaga(t, h, "pm_card_authenticationRequired")

	require.Equal(t, []string{"reserve", "charge", "project:payment_failed", "email:payment_failed", "release"}, h.fx.list())
	require.Equal(t, handoff.SagaPaymentFailed, res.Outcome)
	require.False(t, res.Charged)
	require.False(t, res.StockReserved)
}

// Nobody authenticates: at the deadline the saga cancels the PaymentIntent
// under the event's identity, fails the order without charging and
// releases the stock, as a declined charge does.
func TestSagaThreeDSecureDeadlineCancels(t *testing.T) {
	t.Parallel()
	var h *harness
	var canceledAt time.Time
	h = newHarness(t, fakes{charge: chargeRequiresAction, inventory: inventoryOn, reserve: reserveAnswer(activities.InventoryReserved), release: releaseOK,
		cancelPayment: cancelAnswer(&h, &canceledAt, "canceled")})
	h.signalStockAt(inventoryEvent(t, testStockEvent, activities.InventoryEventReserved, activities.InventoryReserved, ""), time.Second)
	// Too late: the saga has given up by then (it closes first, so this
	// webhook would go to the late-webhook workflow).
	h.signalWebhookAt(webhookEvent(t, "aaaaaaaa-0000-4000-8000-000000000015", "evt_late", "payment_intent.succeeded", testPaymentIntent), 2*testAuthTimeout)

	res := runSaga(t, h, "pm_card_authenticationRequired")

	require.Equal(t, []string{"reserve", "charge", "cancel-payment", "project:payment_failed", "email:payment_failed", "release"}, h.fx.list())
	require.Equal(t, []activities.CancelPaymentInput{{EventID: testCreatedEvent, OrderID: testOrderID, PaymentIntentID: testPaymentIntent}}, h.cancels)
	require.GreaterOrEqual(t, canceledAt.Sub(testOccurredAt), testAuthTimeout, "canceled only after the deadline")
	require.Less(t, canceledAt.Sub(testOccurredAt), testAuthTimeout+time.Minute)
	require.Equal(t, handoff.SagaPaymentFailed, res.Outcome)
	require.Equal(t, ReasonAuthenticationNotCompleted, res.Reason)
	require.False(t, res.Charged)
	require.Empty(t, res.PaymentIntentID, "no charge recorded")
	require.False(t, res.StockReserved, "released")
	require.Len(t, h.charges, 1, "charged once, never again")
}

// The customer completed 3-D Secure just as the deadline passed: the
// cancel finds the PaymentIntent succeeded, and the order is paid.
func TestSagaThreeDSecureCancelFindsItSucceeded(t *testing.T) {
	t.Parallel()
	var h *harness
	var canceledAt time.Time
	h = newHarness(t, fakes{charge: chargeRequiresAction, cancelPayment: cancelAnswer(&h, &canceledAt, "succeeded")})

	res := runSaga(t, h, "pm_card_authenticationRequired")

	require.Equal(t, []string{"charge", "cancel-payment", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.True(t, res.Charged)
	require.Equal(t, testPaymentIntent, res.PaymentIntentID)
	require.Empty(t, res.Reason)
}

// A cancel of the order during the wait cancels the PaymentIntent at once
// (nobody will pay for a cancelled order) and stops the saga.
func TestSagaThreeDSecureOrderCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	var h *harness
	var canceledAt time.Time
	h = newHarness(t, fakes{charge: chargeRequiresAction, cancelPayment: cancelAnswer(&h, &canceledAt, "canceled")})
	h.signalCancelAt(2 * time.Minute)

	res := runSaga(t, h, "pm_card_authenticationRequired")

	require.Equal(t, []string{"charge", "cancel-payment", "project:saga_stopped"}, h.fx.list())
	require.Less(t, canceledAt.Sub(testOccurredAt), 3*time.Minute, "without waiting for the deadline")
	require.Equal(t, handoff.SagaStopped, res.Outcome)
	require.False(t, res.Charged)
}

// A saga cancelled through Temporal while the customer may still
// authenticate cancels the PaymentIntent before deciding about a refund:
// canceled, so nothing to refund and no reconciliation.
func TestSagaThreeDSecureTemporalCancelCancelsTheIntent(t *testing.T) {
	t.Parallel()
	var h *harness
	var canceledAt time.Time
	h = newHarness(t, fakes{charge: chargeRequiresAction, cancelPayment: cancelAnswer(&h, &canceledAt, "canceled")})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, time.Minute)

	h.env.ExecuteWorkflow(OrderCreatedWorkflow, createdInput(t, "pm_card_authenticationRequired"))
	require.True(t, h.env.IsWorkflowCompleted())
	err := h.env.GetWorkflowError()
	var cerr *temporal.CanceledError
	require.ErrorAs(t, err, &cerr)
	var res handoff.SagaResult
	require.NoError(t, cerr.Details(&res))

	require.Equal(t, []string{"charge", "cancel-payment", "project:cancelled"}, h.fx.list())
	require.Equal(t, handoff.SagaCompensated, res.Outcome)
	require.False(t, res.Charged)
	require.False(t, res.Refunded)
}

// A lost charge answer whose reconciliation replay finds the PaymentIntent
// waiting for 3-D Secure waits like a requires_action answer, with the
// deadline reconciliation reports.
func TestSagaThreeDSecureFoundByReconciliation(t *testing.T) {
	t.Parallel()
	var h *harness
	var canceledAt time.Time
	h = newHarness(t, fakes{
		charge: func(int, activities.ChargeInput) (activities.ChargeResult, error) {
			return activities.ChargeResult{}, unknownOutcome()
		},
		reconcile: func(activities.ReconcileInput) (activities.ReconcileResult, error) {
			return activities.ReconcileResult{Outcome: activities.AwaitingAuthentication, PaymentIntentID: testPaymentIntent,
				AuthenticationTimeout: 3 * time.Minute}, nil
		},
		cancelPayment: cancelAnswer(&h, &canceledAt, "canceled"),
	})

	res := runSaga(t, h, "pm_card_authenticationRequired")

	require.Equal(t, []string{"charge", "reconcile", "cancel-payment", "project:payment_failed", "email:payment_failed"}, h.fx.list())
	require.GreaterOrEqual(t, canceledAt.Sub(testOccurredAt), 3*time.Minute)
	require.Equal(t, ReasonAuthenticationNotCompleted, res.Reason)
}

// The marker: a requires_action run records ChangeThreeDSecure; a run
// without the change (replaying an old history) never reaches this code,
// because its recorded charge answer was a decline.
func TestSagaThreeDSecureRecordsItsMarker(t *testing.T) {
	t.Parallel()
	var h *harness
	var canceledAt time.Time
	h = newHarness(t, fakes{charge: chargeRequiresAction, cancelPayment: cancelAnswer(&h, &canceledAt, "canceled")})
	var asked []string
	record := func(ctx workflow.Context, id string, minV, maxV workflow.Version) workflow.Version {
		asked = append(asked, id)
		return workflow.GetVersion(ctx, id, minV, maxV)
	}
	h.env.ExecuteWorkflow(orderCreatedWith(record), createdInput(t, "pm_card_authenticationRequired"))
	require.NoError(t, h.env.GetWorkflowError())
	require.Contains(t, asked, ChangeThreeDSecure)
	require.NotContains(t, asked, ChangePaymentWebhooks, "requires_action is not processing")
}
