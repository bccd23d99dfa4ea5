package workflows

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
)

// The tests of ChangeTimeEdges: runs that are late, replayed, or started for
// an order whose story has moved on (issue "exactly-once at the edges of
// time"). Each names the defect it pins down.

func runSagaInput(t *testing.T, h *harness, in handoff.EventInput) handoff.SagaResult {
	t.Helper()
	h.env.ExecuteWorkflow(OrderCreatedWorkflow, in)
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var res handoff.SagaResult
	require.NoError(t, h.env.GetWorkflowResult(&res))
	return res
}

func replayed(t *testing.T) handoff.EventInput {
	in := createdInput(t, "pm_card_visa")
	in.Delivery = handoff.DeliveryReplay
	return in
}

func orderIs(status string, cancelRequested bool, pi, refund string) func() (activities.OrderStateResult, error) {
	return func() (activities.OrderStateResult, error) {
		return activities.OrderStateResult{Status: status, CancelRequested: cancelRequested, PaymentIntentID: pi, RefundID: refund}, nil
	}
}

// Defect 2: the payment run was terminated before charging, the customer
// cancelled (the cancel saga found nothing charged and cancelled the order),
// then an operator replayed the failed run. The new run never got the cancel
// signal; it must ask the order, and a cancelled order is never charged or
// mailed. It still asks the provider (without the key) so its result tells
// the truth about money.
func TestReplayOfCancelledOrderNeverCharges(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{ // any charge or email fails the test
		orderState: orderIs("cancelled", true, "", ""),
		reconcile: func(in activities.ReconcileInput) (activities.ReconcileResult, error) {
			require.True(t, in.FirstAttemptAt.IsZero(), "learning about a charge must never replay its key")
			return activities.ReconcileResult{Outcome: activities.NotCharged, Via: "list"}, nil
		},
	})
	h.env.SetStartTime(testOccurredAt.Add(2 * time.Hour))

	res := runSagaInput(t, h, replayed(t))

	require.Equal(t, []string{"reconcile", "project:saga_stopped"}, h.fx.list())
	require.Equal(t, handoff.SagaStopped, res.Outcome)
	require.False(t, res.Charged)
	require.Empty(t, h.charges)
	require.Equal(t, 1, h.stateReads)
}

// Defect 2, related: a run that was cancelled through Temporal and refunded
// itself left the order cancelled; a replay must not mail "confirmed" for a
// refunded order, nor charge it again.
func TestReplayOfRefundedOrderSendsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{orderState: orderIs("cancelled", false, testPaymentIntent, "re_1")})
	h.env.SetStartTime(testOccurredAt.Add(2 * time.Hour))

	res := runSagaInput(t, h, replayed(t))

	require.Equal(t, []string{"project:saga_stopped"}, h.fx.list(), "no charge, no email")
	require.Equal(t, handoff.SagaStopped, res.Outcome)
	require.True(t, res.Charged, "the result says money was taken (and the order says it was refunded)")
	require.Equal(t, testPaymentIntent, res.PaymentIntentID)
}

// A cancel was requested while no run was open (the earlier run terminated):
// the replayed run sees it in the database and stops before charging, even
// though no signal ever reaches it.
func TestReplayWithCancelRequestedNeverCharges(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		orderState: orderIs("pending", true, "", ""),
		reconcile: func(activities.ReconcileInput) (activities.ReconcileResult, error) {
			return activities.ReconcileResult{Outcome: activities.NotCharged}, nil
		},
	})
	res := runSagaInput(t, h, replayed(t))
	require.Equal(t, []string{"reconcile", "project:saga_stopped"}, h.fx.list())
	require.Equal(t, handoff.SagaStopped, res.Outcome)
	require.True(t, h.sagaStatus().CancelRequested)
}

// An earlier run finished the event's work: a new run (replay, or a
// re-delivery behind the namespace retention) charges and mails nothing.
func TestRunOfFinishedOrderDoesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status string
		want   handoff.SagaOutcome
	}{
		{"confirmed", handoff.SagaConfirmed},
		{"payment_failed", handoff.SagaPaymentFailed},
	} {
		t.Run(tc.status, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, fakes{orderState: orderIs(tc.status, false, testPaymentIntent, "")})
			res := runSagaInput(t, h, replayed(t))
			require.Empty(t, h.fx.list())
			require.Equal(t, tc.want, res.Outcome)
		})
	}
}

// An earlier run charged and projected paid, then died before the
// confirmation: the new run confirms without charging.
func TestRunOfPaidOrderConfirmsWithoutCharging(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{orderState: orderIs("paid", false, testPaymentIntent, "")})
	res := runSagaInput(t, h, replayed(t))
	require.Equal(t, []string{"email:confirmation", "project:confirmed"}, h.fx.list())
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.Equal(t, testPaymentIntent, res.PaymentIntentID)
}

// Defect 3: a first delivery a day late (a Temporal outage, or a
// quarantined OrderCreated retried the next day) has no earlier run, so its
// key is fresh: it charges, instead of reporting a decline that never
// happened.
func TestLateFirstDeliveryCharges(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{charge: chargeOK}) // a reconcile fails the test
	h.env.SetStartTime(testOccurredAt.Add(30 * time.Hour))
	in := createdInput(t, "pm_card_visa")
	in.Delivery = handoff.DeliveryFirst

	res := runSagaInput(t, h, in)

	require.Equal(t, []string{"charge", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
}

// Defect 6: reconciliation reads the provider's list in bounded calls, and
// the workflow keeps the cursor between them.
func TestReconcileWalksTheListWithACursor(t *testing.T) {
	t.Parallel()
	calls := 0
	h := newHarness(t, fakes{
		charge: chargeOK,
		reconcile: func(in activities.ReconcileInput) (activities.ReconcileResult, error) {
			calls++
			require.Equal(t, activities.DefaultReconcileListPages, in.ListPages)
			require.False(t, in.ListUntil.IsZero(), "the walk has an upper bound")
			switch calls {
			case 1:
				require.Empty(t, in.ListCursor)
				return activities.ReconcileResult{Outcome: activities.NotCharged, Incomplete: true, ListCursor: "pi_a"}, nil
			case 2:
				require.Equal(t, "pi_a", in.ListCursor)
				return activities.ReconcileResult{Outcome: activities.NotCharged, Incomplete: true, ListCursor: "pi_b"}, nil
			default:
				require.Equal(t, "pi_b", in.ListCursor)
				return activities.ReconcileResult{Outcome: activities.Charged, PaymentIntentID: testPaymentIntent}, nil
			}
		},
	})
	h.env.SetStartTime(testOccurredAt.Add(25 * time.Hour)) // unknown delivery, past the key's lifetime

	res := runSagaInput(t, h, createdInput(t, "pm_card_visa"))

	require.Equal(t, 3, calls)
	require.Equal(t, []string{"reconcile", "reconcile", "reconcile", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
}

// Defects 1 and 6: a late cancel whose payment saga has no result, on an
// account whose list never ends within the bound: the cancel fails as a
// CompensationFailed (metric, memo, log), not as an anonymous error.
func TestCancelWhoseReconciliationCannotFinishIsACompensationFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		await: func(activities.AwaitSagaInput) (activities.AwaitSagaResult, error) {
			return activities.AwaitSagaResult{Problem: "not found (past retention)"}, nil
		},
		reconcile: func(in activities.ReconcileInput) (activities.ReconcileResult, error) {
			return activities.ReconcileResult{Outcome: activities.NotCharged, Incomplete: true, ListCursor: "pi_next"}, nil
		},
	})
	expectSignal(h, &temporal.UnknownExternalWorkflowExecutionError{})

	h.env.ExecuteWorkflow(OrderCancelledWorkflow, cancelledInput(t))

	details := requireCompensationFailure(t, h)
	require.Contains(t, details.Error, "did not reach the event's time")
	require.Len(t, h.reconciles, maxReconcileCalls)
	require.Zero(t, countOf(h.fx.list(), "project:saga_stopped"), "nothing projected")
}

// Every terminal failure of a cancel after the money is settled (here the
// cancelled projection) reaches an operator as a CompensationFailed.
func TestCancelProjectionFailureIsACompensationFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		await:  sagaResult(handoff.SagaConfirmed, true),
		refund: refundOK,
		project: func(in activities.ProjectOrderInput) (activities.ProjectOrderResult, error) {
			return activities.ProjectOrderResult{}, temporalAppError("order gone", activities.ErrTypeOrderNotFound, true)
		},
	})
	expectSignal(h, nil)

	h.env.ExecuteWorkflow(OrderCancelledWorkflow, cancelledInput(t))

	requireCompensationFailed(t, h)
	require.Equal(t, []string{"await", "refund:pi_test_1:2500", "project:cancelled"}, h.fx.list())
}

// Defect 1 at the workflow level: the fallback closes the saga's event with
// sequence 0 (the order knows its created event's sequence after cleanup
// deleted the event) and refunds.
func TestLateCancelFallbackRefunds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		await: func(activities.AwaitSagaInput) (activities.AwaitSagaResult, error) {
			return activities.AwaitSagaResult{Problem: "not found (past retention)"}, nil
		},
		reconcile: func(activities.ReconcileInput) (activities.ReconcileResult, error) {
			return activities.ReconcileResult{Outcome: activities.Charged, PaymentIntentID: testPaymentIntent, Amount: testAmount, Currency: "usd"}, nil
		},
		refund: refundOK,
		project: func(in activities.ProjectOrderInput) (activities.ProjectOrderResult, error) {
			if in.Step == activities.StepSagaStopped {
				require.Zero(t, in.Sequence, "the fallback does not know the sequence; the order does")
			}
			return activities.ProjectOrderResult{Applied: true, Status: string(in.Step), CustomerEmail: testEmail}, nil
		},
	})
	expectSignal(h, &temporal.UnknownExternalWorkflowExecutionError{})
	h.env.SetStartTime(testOccurredAt.Add(10 * 24 * time.Hour))

	res := runCancel(t, h)

	require.Equal(t, []string{"await", "reconcile", "project:saga_stopped", "refund:pi_test_1:2500", "project:cancelled", "email:cancellation"}, h.fx.list())
	require.True(t, res.Refunded)
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

func TestHorizonRelations(t *testing.T) {
	t.Parallel()
	require.NoError(t, CheckHorizons())
	require.Less(t, ChargeWindow, activities.KeyLifetime)
}
