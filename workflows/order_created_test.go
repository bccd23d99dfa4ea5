package workflows

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
)

func chargeOK(int, activities.ChargeInput) (activities.ChargeResult, error) {
	return activities.ChargeResult{PaymentIntentID: testPaymentIntent}, nil
}

// reconcileCharged is reconciliation finding the charge (testPaymentIntent).
func reconcileCharged(activities.ReconcileInput) (activities.ReconcileResult, error) {
	return activities.ReconcileResult{Outcome: activities.Charged, PaymentIntentID: testPaymentIntent}, nil
}

func runSaga(t *testing.T, h *harness, method string) handoff.SagaResult {
	t.Helper()
	h.env.ExecuteWorkflow(OrderCreatedWorkflow, createdInput(t, method))
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var res handoff.SagaResult
	require.NoError(t, h.env.GetWorkflowResult(&res))
	return res
}

// The happy path: one charge, paid, one confirmation email, confirmed — and
// the OrderId search attribute is set.
func TestSagaSuccess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{charge: chargeOK})
	h.env.OnUpsertTypedSearchAttributes(mock.MatchedBy(func(sa temporal.SearchAttributes) bool {
		v, ok := sa.GetKeyword(orderIDKey)
		return ok && v == testOrderID
	})).Return(nil).Once()

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"charge", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.True(t, res.Charged)
	require.Equal(t, testPaymentIntent, res.PaymentIntentID)
	require.Equal(t, StageConfirmed, h.sagaStatus().Stage)
}

// A decline is final: no reconcile, no retry, payment_failed and its email.
func TestSagaDeclined(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{charge: func(int, activities.ChargeInput) (activities.ChargeResult, error) {
		return activities.ChargeResult{}, declinedErr()
	}})

	res := runSaga(t, h, "pm_card_chargeDeclined")

	require.Equal(t, []string{"charge", "project:payment_failed", "email:payment_failed"}, h.fx.list())
	require.Equal(t, handoff.SagaPaymentFailed, res.Outcome)
	require.False(t, res.Charged)
}

// A lost answer is reconciled, and a charge the provider holds is adopted:
// the saga never charges a second time.
func TestSagaUnknownOutcomeReconciledAsCharged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		charge: func(int, activities.ChargeInput) (activities.ChargeResult, error) {
			return activities.ChargeResult{}, unknownOutcome()
		},
		reconcile: func(in activities.ReconcileInput) (activities.ReconcileResult, error) {
			require.Equal(t, testCreatedEvent, in.Charge.EventID)
			require.False(t, in.FirstAttemptAt.IsZero(), "the key's first use must be known so the replay stays in its lifetime")
			require.Equal(t, testOccurredAt, in.OccurredAt)
			return activities.ReconcileResult{Outcome: activities.Charged, PaymentIntentID: "pi_found"}, nil
		},
	})

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"charge", "reconcile", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
	require.Equal(t, "pi_found", res.PaymentIntentID)
	require.Len(t, h.charges, 1)
}

// Reconciliation proves nothing was charged: the saga charges again, with the
// very same request (so the same key), and exactly one charge succeeds.
func TestSagaUnknownOutcomeNotChargedThenChargedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		charge: func(n int, _ activities.ChargeInput) (activities.ChargeResult, error) {
			if n == 1 {
				return activities.ChargeResult{}, unknownOutcome()
			}
			return activities.ChargeResult{PaymentIntentID: testPaymentIntent}, nil
		},
		reconcile: func(activities.ReconcileInput) (activities.ReconcileResult, error) {
			return activities.ReconcileResult{Outcome: activities.NotCharged, Via: "search"}, nil
		},
	})

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"charge", "reconcile", "charge", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
	require.Len(t, h.charges, 2)
	require.Equal(t, h.charges[0], h.charges[1], "a second attempt must reuse the first one's parameters and key")
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.Equal(t, 2, h.sagaStatus().ChargeRounds)
}

// A provider that never records the charge is not hammered forever: after
// maxChargeRounds the saga gives up and reports payment_failed.
func TestSagaGivesUpAfterMaxRounds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		charge: func(int, activities.ChargeInput) (activities.ChargeResult, error) {
			return activities.ChargeResult{}, unknownOutcome()
		},
		reconcile: func(activities.ReconcileInput) (activities.ReconcileResult, error) {
			return activities.ReconcileResult{Outcome: activities.NotCharged}, nil
		},
	})
	res := runSaga(t, h, "pm_card_visa")
	require.Len(t, h.charges, maxChargeRounds)
	require.Equal(t, handoff.SagaPaymentFailed, res.Outcome)
	var paused time.Duration
	for round := 1; round < maxChargeRounds; round++ {
		paused += chargeRoundPause(round)
	}
	require.GreaterOrEqual(t, h.env.Now().Sub(testOccurredAt), paused, "rounds wait between them")
}

// A run that starts after the charge key's lifetime (an operator's replay of
// a failed saga a day later) must not charge under the expired key: a new
// charge there could be the second. It asks the provider first, and only
// its record decides.
func TestSagaLateRunReconcilesFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		outcome activities.ReconcileOutcome
		want    handoff.SagaOutcome
		effects []string
	}{
		{"charged by an earlier run", activities.Charged, handoff.SagaConfirmed,
			[]string{"reconcile", "project:paid", "email:confirmation", "project:confirmed"}},
		// The provider's complete record holds no charge and the order is
		// pending: nothing was taken, so the late run charges (before
		// ChangeTimeEdges it reported a decline that never happened).
		{"never charged", activities.NotCharged, handoff.SagaConfirmed,
			[]string{"reconcile", "charge", "project:paid", "email:confirmation", "project:confirmed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, fakes{
				charge: chargeOK,
				reconcile: func(in activities.ReconcileInput) (activities.ReconcileResult, error) {
					require.Equal(t, testOccurredAt, in.FirstAttemptAt, "the key's lifetime counts from the event")
					return activities.ReconcileResult{Outcome: tc.outcome, PaymentIntentID: testPaymentIntent}, nil
				},
			})
			h.env.SetStartTime(testOccurredAt.Add(25 * time.Hour))
			res := runSaga(t, h, "pm_card_visa")
			require.Equal(t, tc.want, res.Outcome)
			require.Equal(t, tc.effects, h.fx.list())
		})
	}
}

// A cancel that arrives before the charge: nothing is ever charged; the saga
// closes its event and stops.
func TestSagaCancelBeforeCharge(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{}) // any charge fails the test
	h.signalCancelAt(0)

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"project:saga_stopped"}, h.fx.list())
	require.Equal(t, handoff.SagaStopped, res.Outcome)
	require.False(t, res.Charged)
	st := h.sagaStatus()
	require.True(t, st.CancelRequested)
	require.Equal(t, testCancelEvent, st.CancelEventID)
}

// A cancel that arrives while the charge's outcome is unknown: the saga
// reconciles to learn the truth (charged), records it and stops — no
// confirmation email, no second charge. The cancel workflow refunds.
func TestSagaCancelDuringUnknownOutcome(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		chargeDelay: time.Minute,
		charge: func(int, activities.ChargeInput) (activities.ChargeResult, error) {
			return activities.ChargeResult{}, unknownOutcome()
		},
		reconcile: reconcileCharged,
	})
	h.signalCancelAt(30 * time.Second)

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"charge", "reconcile", "project:paid", "project:saga_stopped"}, h.fx.list())
	require.Equal(t, handoff.SagaStopped, res.Outcome)
	require.True(t, res.Charged)
	require.Equal(t, testPaymentIntent, res.PaymentIntentID)
}

// Same, but reconciliation proves nothing was charged: the saga stops without
// charging again.
func TestSagaCancelDuringUnknownOutcomeNotCharged(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		chargeDelay: time.Minute,
		charge: func(int, activities.ChargeInput) (activities.ChargeResult, error) {
			return activities.ChargeResult{}, unknownOutcome()
		},
		reconcile: func(activities.ReconcileInput) (activities.ReconcileResult, error) {
			return activities.ReconcileResult{Outcome: activities.NotCharged}, nil
		},
	})
	h.signalCancelAt(30 * time.Second)

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"charge", "reconcile", "project:saga_stopped"}, h.fx.list())
	require.False(t, res.Charged)
}

// A cancel that arrives while a successful charge is in flight: the saga
// records the payment and stops before the confirmation email.
func TestSagaCancelAfterChargeBeforeConfirmation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{chargeDelay: time.Minute, charge: chargeOK})
	h.signalCancelAt(30 * time.Second)

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"charge", "project:paid", "project:saga_stopped"}, h.fx.list())
	require.Equal(t, handoff.SagaStopped, res.Outcome)
	require.True(t, res.Charged)
}

// A Temporal cancel of the saga (not an order cancel) while the charge's
// outcome is unknown: compensation runs on a disconnected context, learns
// the charge happened, refunds it and projects cancelled.
func TestSagaTemporalCancelCompensates(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		chargeDelay: time.Minute,
		charge:      chargeOK, // the answer never reaches the cancelled workflow
		reconcile:   reconcileCharged,
		refund: func(activities.RefundInput) (activities.RefundResult, error) {
			return activities.RefundResult{RefundID: "re_1"}, nil
		},
	})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 30*time.Second)

	h.env.ExecuteWorkflow(OrderCreatedWorkflow, createdInput(t, "pm_card_visa"))

	require.True(t, h.env.IsWorkflowCompleted())
	var canceled *temporal.CanceledError
	require.ErrorAs(t, h.env.GetWorkflowError(), &canceled)
	// The in-flight charge was abandoned by the cancelled run (its answer
	// is lost to it), so compensation had to reconcile before refunding.
	require.Equal(t, []string{"reconcile", "refund:" + testPaymentIntent + ":2500", "project:cancelled"}, h.fx.list())
	require.Equal(t, StageCompensated, h.sagaStatus().Stage)
}

// The saga's own compensation fails for good: the run fails with a
// non-retryable CompensationFailed naming the order, the metric counts it,
// and the status query shows it.
func TestSagaCompensationFailureIsVisible(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{
		chargeDelay: time.Minute,
		charge:      chargeOK,
		reconcile:   reconcileCharged,
		refund: func(activities.RefundInput) (activities.RefundResult, error) {
			return activities.RefundResult{}, temporalAppError("refund rejected", activities.ErrTypeRefundRejected, true)
		},
	})
	h.env.RegisterDelayedCallback(h.env.CancelWorkflow, 30*time.Second)

	h.env.ExecuteWorkflow(OrderCreatedWorkflow, createdInput(t, "pm_card_visa"))

	requireCompensationFailed(t, h)
	require.Equal(t, StageCompensationFailed, h.sagaStatus().Stage)
}

func requireCompensationFailed(t *testing.T, h *harness) {
	t.Helper()
	require.Equal(t, testPaymentIntent, requireCompensationFailure(t, h).PaymentIntentID)
}

// requireCompensationFailure checks the run failed as a CompensationFailed
// for the test order, counted once, and returns its details.
func requireCompensationFailure(t *testing.T, h *harness) CompensationFailure {
	t.Helper()
	require.True(t, h.env.IsWorkflowCompleted())
	err := h.env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "want an ApplicationError, got %v", err)
	require.Equal(t, ErrTypeCompensationFailed, appErr.Type())
	require.True(t, appErr.NonRetryable())
	var details CompensationFailure
	require.NoError(t, appErr.Details(&details))
	require.Equal(t, testOrderID, details.OrderID)
	require.EqualValues(t, 1, h.metrics.count(MetricCompensationFailures))
	return details
}
