package workflows

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
)

// chargeProcessing answers the charge as the activity does for a
// PaymentIntent the provider left processing.
func chargeProcessing(int, activities.ChargeInput) (activities.ChargeResult, error) {
	return activities.ChargeResult{}, temporal.NewApplicationErrorWithOptions("payment intent "+testPaymentIntent+" is still processing",
		activities.ErrTypePaymentOutcomeUnknown, temporal.ApplicationErrorOptions{NonRetryable: true,
			Details: []any{activities.PaymentProcessingDetails{PaymentIntentID: testPaymentIntent, Status: "processing"}}})
}

// webhookEvent is the PaymentWebhookReceived event the relay delivers.
func webhookEvent(t *testing.T, eventID, stripeEventID, typ, pi string) handoff.EventInput {
	t.Helper()
	payload, err := json.Marshal(orders.PaymentWebhookReceived{StripeEventID: stripeEventID, Type: typ, Created: testOccurredAt.Unix(),
		OrderID: testOrderID, SagaWorkflowID: testCreatedEvent, ObjectID: pi, ObjectType: "payment_intent", PaymentIntentID: pi,
		FailureCode: map[bool]string{true: "card_declined"}[typ == "payment_intent.payment_failed"]})
	require.NoError(t, err)
	return handoff.EventInput{EventID: eventID, EventType: orders.EventPaymentWebhookReceived, AggregateType: orders.AggregatePayment,
		AggregateID: testOrderID, Sequence: 1, SchemaVersion: orders.PaymentWebhookReceivedVersion, OccurredAt: testOccurredAt, Payload: payload}
}

func (h *harness) signalWebhookAt(ev handoff.EventInput, d time.Duration) {
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(handoff.SignalPaymentWebhook, ev) }, d)
}

// A processing charge is settled by its webhook, not by reconciliation: a
// webhook of another PaymentIntent and one that only says "processing" do
// not end the wait, payment_intent.succeeded does, and its re-delivery
// changes nothing.
func TestSagaProcessingChargeSettledByWebhook(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{charge: chargeProcessing})
	h.signalWebhookAt(webhookEvent(t, "aaaaaaaa-0000-4000-8000-000000000001", "evt_other", "payment_intent.succeeded", "pi_other"), time.Hour)
	h.signalWebhookAt(webhookEvent(t, "aaaaaaaa-0000-4000-8000-000000000002", "evt_proc", "payment_intent.processing", testPaymentIntent), 2*time.Hour)
	ok := webhookEvent(t, "aaaaaaaa-0000-4000-8000-000000000003", "evt_ok", "payment_intent.succeeded", testPaymentIntent)
	h.signalWebhookAt(ok, 3*time.Hour)
	h.signalWebhookAt(ok, 3*time.Hour+time.Second)

	res := runSaga(t, h, "pm_sim_processing")

	require.Equal(t, []string{"charge", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list(), "no reconciliation, one charge")
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.True(t, res.Charged)
	require.Equal(t, testPaymentIntent, res.PaymentIntentID)
}

// payment_intent.payment_failed for the processing charge fails the order.
func TestSagaProcessingChargeFailedByWebhook(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{charge: chargeProcessing})
	h.signalWebhookAt(webhookEvent(t, "aaaaaaaa-0000-4000-8000-000000000004", "evt_no", "payment_intent.payment_failed", testPaymentIntent), time.Minute)

	res := runSaga(t, h, "pm_sim_processing")

	require.Equal(t, []string{"charge", "project:payment_failed", "email:payment_failed"}, h.fx.list())
	require.Equal(t, handoff.SagaPaymentFailed, res.Outcome)
	require.False(t, res.Charged)
}

// No webhook within ProcessingWebhookWait: reconciliation, the fallback,
// asks the provider, and its answer decides.
func TestSagaProcessingChargeWithoutWebhookReconciles(t *testing.T) {
	t.Parallel()
	var h *harness
	var reconciledAt time.Time
	h = newHarness(t, fakes{charge: chargeProcessing, reconcile: func(activities.ReconcileInput) (activities.ReconcileResult, error) {
		reconciledAt = h.env.Now()
		return activities.ReconcileResult{Outcome: activities.Charged, PaymentIntentID: testPaymentIntent}, nil
	}})

	res := runSaga(t, h, "pm_sim_processing")

	require.Equal(t, []string{"charge", "reconcile", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.GreaterOrEqual(t, reconciledAt.Sub(testOccurredAt), ProcessingWebhookWait, "reconciled only after the wait")
}

// A run that reached a processing charge before ChangePaymentWebhooks
// (no marker) reconciles at once, as it did then.
func TestSagaProcessingBeforeTheChangeReconciles(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{charge: chargeProcessing, reconcile: reconcileCharged})
	h.env.ExecuteWorkflow(orderCreatedWith(pinned(ChangePaymentWebhooks, workflow.DefaultVersion)), createdInput(t, "pm_sim_processing"))
	require.NoError(t, h.env.GetWorkflowError())
	var res handoff.SagaResult
	require.NoError(t, h.env.GetWorkflowResult(&res))

	require.Equal(t, []string{"charge", "reconcile", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
}
