package workflows

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
)

const (
	testDisputeEvent = "dddddddd-0000-4000-8000-000000000001"
	testRefundEvent  = "dddddddd-0000-4000-8000-000000000002"
)

// incidentEvent is the PaymentWebhookReceived event of a dispute
// (charge.dispute.created) or of a refund that failed
// (charge.refund.updated, status failed).
func incidentEvent(t *testing.T, eventID, typ string) handoff.EventInput {
	t.Helper()
	w := orders.PaymentWebhookReceived{StripeEventID: "evt_" + eventID[:8], Type: typ, Created: testOccurredAt.Unix(),
		OrderID: testOrderID, SagaWorkflowID: testCreatedEvent, PaymentIntentID: testPaymentIntent, Amount: testAmount, Currency: "usd"}
	switch typ {
	case "charge.dispute.created":
		w.ObjectID, w.ObjectType, w.Status, w.FailureCode = "dp_1", "dispute", "needs_response", "fraudulent"
	case "charge.refund.updated":
		w.ObjectID, w.ObjectType, w.Status, w.FailureCode = "re_1", "refund", "failed", "expired_or_canceled_card"
	}
	payload, err := json.Marshal(w)
	require.NoError(t, err)
	return handoff.EventInput{EventID: eventID, EventType: orders.EventPaymentWebhookReceived, AggregateType: orders.AggregatePayment,
		AggregateID: testOrderID, Sequence: 2, SchemaVersion: orders.PaymentWebhookReceivedVersion, OccurredAt: testOccurredAt, Payload: payload}
}

func runLate(t *testing.T, h *harness, ev handoff.EventInput) error {
	t.Helper()
	h.env.ExecuteWorkflow(PaymentWebhookLateWorkflow, ev)
	require.True(t, h.env.IsWorkflowCompleted())
	return h.env.GetWorkflowError()
}

// A dispute after the saga closed marks the order disputed (the activity,
// which counts it) and the late workflow completes.
func TestLateDisputeMarksTheOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{})
	require.NoError(t, runLate(t, h, incidentEvent(t, testDisputeEvent, "charge.dispute.created")))
	require.Equal(t, []string{"incident:dispute"}, h.fx.list())
	require.Equal(t, []activities.PaymentIncidentInput{{EventID: testDisputeEvent, OrderID: testOrderID, Kind: activities.IncidentDispute,
		StripeEventID: "evt_dddddddd", ObjectID: "dp_1", PaymentIntentID: testPaymentIntent, Amount: testAmount, Reason: "fraudulent"}}, h.incidents)
	require.Zero(t, h.metrics.count(MetricCompensationFailures))
}

// A refund that failed after it was accepted, its saga closed: the order
// is marked refund_failed and the late workflow fails CompensationFailed,
// counted, like a refund refused at once.
func TestLateRefundFailureIsACompensationFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{})
	require.Error(t, runLate(t, h, incidentEvent(t, testRefundEvent, "charge.refund.updated")))
	f := requireCompensationFailure(t, h)
	require.Equal(t, CompensationRefund, f.Compensation)
	require.Equal(t, testPaymentIntent, f.PaymentIntentID)
	require.Equal(t, testAmount, f.Amount)
	require.Contains(t, f.Error, "re_1")
	require.Equal(t, []string{"incident:refund_failed"}, h.fx.list())
}

// The same event handled before (the saga took its signal just before it
// closed, the relay delivered it again): nothing is reported twice.
func TestLateIncidentAlreadyHandled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{incident: func(activities.PaymentIncidentInput) (activities.PaymentIncidentResult, error) {
		return activities.PaymentIncidentResult{Status: "cancelled"}, nil
	}})
	require.NoError(t, runLate(t, h, incidentEvent(t, testRefundEvent, "charge.refund.updated")))
	require.Zero(t, h.metrics.count(MetricCompensationFailures))
}

// Any other late webhook is only recorded in the history.
func TestLateWebhookWithoutIncident(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{})
	require.NoError(t, runLate(t, h, webhookEvent(t, "aaaaaaaa-0000-4000-8000-000000000009", "evt_ok", "payment_intent.succeeded", testPaymentIntent)))
	require.Empty(t, h.fx.list())
}

// A dispute signalled while the saga runs (the charge in flight) is not
// lost with the run: the saga takes it as it closes and marks the order.
func TestSagaTakesADisputeAsItCloses(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{charge: chargeOK, chargeDelay: time.Minute})
	h.signalWebhookAt(incidentEvent(t, testDisputeEvent, "charge.dispute.created"), 30*time.Second)

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.Equal(t, []string{"charge", "project:paid", "email:confirmation", "project:confirmed", "incident:dispute"}, h.fx.list())
	require.Zero(t, h.metrics.count(MetricCompensationFailures))
}

// A dispute while the saga waits for a processing charge's webhook is
// handled at once, and the wait goes on.
func TestSagaHandlesADisputeWhileWaiting(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{charge: chargeProcessing})
	h.signalWebhookAt(incidentEvent(t, testDisputeEvent, "charge.dispute.created"), time.Hour)
	h.signalWebhookAt(webhookEvent(t, "aaaaaaaa-0000-4000-8000-000000000003", "evt_ok", "payment_intent.succeeded", testPaymentIntent), 2*time.Hour)

	res := runSaga(t, h, "pm_sim_processing")

	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.Equal(t, []string{"charge", "incident:dispute", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
}

// A saga compensating a Temporal cancel refunds, and the refund's failure
// arrives before the saga closes: the compensation failed after all, the
// run fails CompensationFailed as if the provider had refused the refund.
func TestSagaCompensationRefundFailsLate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		chargeDelay: time.Minute,
		charge:      chargeOK,
		reconcile:   reconcileCharged,
		refund: func(activities.RefundInput) (activities.RefundResult, error) {
			return activities.RefundResult{RefundID: "re_1"}, nil
		},
	})
	h.signalWebhookAt(incidentEvent(t, testRefundEvent, "charge.refund.updated"), 10*time.Second)
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 30*time.Second)

	h.env.ExecuteWorkflow(OrderCreatedWorkflow, createdInput(t, "pm_card_visa"))

	f := requireCompensationFailure(t, h)
	require.Equal(t, testPaymentIntent, f.PaymentIntentID)
	require.Equal(t, []string{"reconcile", "refund:" + testPaymentIntent + ":2500", "project:cancelled", "incident:refund_failed"}, h.fx.list())
	require.Equal(t, StageCompensationFailed, h.sagaStatus().Stage)
}

// A refund failure a saga learns as it closes on its own result
// (confirmed, say) is reported as a compensation failure, and the saga's
// result stays, for the cancel workflow.
func TestSagaReportsARefundFailureAndKeepsItsResult(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{charge: chargeOK, chargeDelay: time.Minute})
	h.signalWebhookAt(incidentEvent(t, testRefundEvent, "charge.refund.updated"), 30*time.Second)

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.EqualValues(t, 1, h.metrics.count(MetricCompensationFailures))
	st := h.sagaStatus()
	require.Equal(t, StageConfirmed, st.Stage)
	require.Contains(t, st.LastError, "refund re_1 failed")
}
