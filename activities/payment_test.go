package activities

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/outflow/outflow/providersim"
)

func newCharge(method string) ChargeInput {
	return ChargeInput{EventID: uuid.NewString(), OrderID: uuid.NewString(), Amount: 2500, Currency: "usd", PaymentMethod: method}
}

// A charge carries the derived key and the metadata reconciliation needs,
// and a retry of it (same key) replays instead of charging again.
func TestChargeSucceedsOnceUnderItsKey(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	in := newCharge("pm_card_visa")

	first, err := acts.ChargePayment(ctxT(t), in)
	require.NoError(t, err)
	again, err := acts.ChargePayment(ctxT(t), in)
	require.NoError(t, err)

	require.Equal(t, first, again)
	l := b.sim.Ledger()
	require.Len(t, l.PaymentIntents, 1)
	pi := l.PaymentIntents[0]
	require.Equal(t, first.PaymentIntentID, pi.ID)
	require.Equal(t, "succeeded", pi.Status)
	require.Equal(t, ChargeKey(in.EventID), pi.IdempotencyKey)
	require.Equal(t, in.EventID, pi.Metadata[MetadataEventID])
	require.Equal(t, in.OrderID, pi.Metadata[MetadataOrderID])
}

// A declined card is a non-retryable PaymentDeclined error, as Temporal sees
// it through an activity environment (so the retry policy never retries it).
func TestChargeDeclinedIsNonRetryable(t *testing.T) {
	t.Parallel()
	acts, _ := setup(t)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)

	_, err := env.ExecuteActivity(acts.ChargePayment, newCharge("pm_card_chargeDeclined"))

	requireAppError(t, err, ErrTypePaymentDeclined, true)
}

// The simulator's "decline" fault declines any card the same way.
func TestChargeDeclineFault(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	b.fault(t, providersim.OperationPaymentIntentsCreate, "decline")

	_, err := acts.ChargePayment(ctxT(t), newCharge("pm_card_visa"))

	requireAppError(t, err, ErrTypePaymentDeclined, true)
}

// A 500 says nothing about the charge: PaymentOutcomeUnknown, retryable. The
// reconciliation replay under the same key then performs it, once.
func TestChargeError500IsUnknownAndRetryable(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	in := newCharge("pm_card_visa")
	b.fault(t, providersim.OperationPaymentIntentsCreate, "error_500")
	started := b.clock.Now()

	_, err := acts.ChargePayment(ctxT(t), in)
	requireAppError(t, err, ErrTypePaymentOutcomeUnknown, false)

	rec, err := acts.ReconcilePayment(ctxT(t), ReconcileInput{Charge: in, FirstAttemptAt: started})
	require.NoError(t, err)
	require.Equal(t, Charged, rec.Outcome)
	require.Equal(t, "replay", rec.Via)
	require.Len(t, b.sim.Ledger().PaymentIntents, 1)
}

// The provider commits the charge and the answer is lost: the activity
// reports an unknown outcome, and reconciliation finds the existing
// PaymentIntent — by replaying the key within its lifetime, by searching
// after it — and never makes a second one.
func TestTimeoutAfterCommitIsReconciledToTheExistingIntent(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	in := newCharge("pm_card_visa")
	b.fault(t, providersim.OperationPaymentIntentsCreate, "timeout_after_commit")
	started := b.clock.Now()

	_, err := acts.ChargePayment(ctxT(t), in)
	requireAppError(t, err, ErrTypePaymentOutcomeUnknown, false)
	l := b.sim.Ledger()
	require.Len(t, l.PaymentIntents, 1, "the provider committed the charge")
	existing := l.PaymentIntents[0].ID

	rec, err := acts.ReconcilePayment(ctxT(t), ReconcileInput{Charge: in, FirstAttemptAt: started, OccurredAt: started})
	require.NoError(t, err)
	require.Equal(t, ReconcileResult{Outcome: Charged, PaymentIntentID: existing, Amount: 2500, Currency: "usd", Via: "replay"}, rec)

	// A day later the key is gone: a replay would be a new charge, so
	// reconciliation must search instead.
	b.clock.Advance(25 * time.Hour)
	rec, err = acts.ReconcilePayment(ctxT(t), ReconcileInput{Charge: in, FirstAttemptAt: started, OccurredAt: started})
	require.NoError(t, err)
	require.Equal(t, Charged, rec.Outcome)
	require.Equal(t, existing, rec.PaymentIntentID)
	require.Equal(t, "search", rec.Via)

	require.Len(t, b.sim.Ledger().PaymentIntents, 1, "never a second PaymentIntent")
}

// A charge whose first request is still executing at the provider (409,
// idempotency_key_in_use) is in doubt, not "not charged": neither a second
// charge nor reconciliation may decide until it has finished, and the
// reconciliation after it finds that one charge.
func TestInFlightChargeIsUnknownNotNotCharged(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	in := newCharge("pm_card_visa")
	b.fault(t, providersim.OperationPaymentIntentsCreate, "latency:500ms")
	started := b.clock.Now()
	first := make(chan error, 1)
	go func() {
		_, err := acts.ChargePayment(ctxT(t), in)
		first <- err
	}()
	require.Eventually(t, func() bool { return len(b.sim.Faults()) == 0 }, 5*time.Second, 5*time.Millisecond,
		"the first request holds the key")

	_, err := acts.ChargePayment(ctxT(t), in)
	requireAppError(t, err, ErrTypePaymentOutcomeUnknown, false)
	_, err = acts.ReconcilePayment(ctxT(t), ReconcileInput{Charge: in, FirstAttemptAt: started, OccurredAt: started})
	requireAppError(t, err, ErrTypePaymentOutcomeUnknown, false)

	require.NoError(t, <-first)
	rec, err := acts.ReconcilePayment(ctxT(t), ReconcileInput{Charge: in, FirstAttemptAt: started, OccurredAt: started})
	require.NoError(t, err)
	require.Equal(t, Charged, rec.Outcome)
	require.Len(t, b.sim.Ledger().PaymentIntents, 1)
}

// The key held other parameters (idempotency_error): only a search can tell,
// and it finds the charge.
func TestReconcileIdempotencyConflictSearches(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	in := newCharge("pm_card_visa")
	charged, err := acts.ChargePayment(ctxT(t), in)
	require.NoError(t, err)

	other := in
	other.Amount = 9999
	_, err = acts.ChargePayment(ctxT(t), other)
	requireAppError(t, err, ErrTypePaymentIdempotencyConflict, false)

	rec, err := acts.ReconcilePayment(ctxT(t), ReconcileInput{Charge: other, FirstAttemptAt: b.clock.Now()})
	require.NoError(t, err)
	require.Equal(t, Charged, rec.Outcome)
	require.Equal(t, charged.PaymentIntentID, rec.PaymentIntentID)
	require.Equal(t, "search", rec.Via)
	require.Len(t, b.sim.Ledger().PaymentIntents, 1)
}

// Nothing was ever charged: outside the key's lifetime reconciliation only
// looks (search, then list) and says not_charged, creating nothing.
func TestReconcileNotChargedCreatesNothing(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	in := newCharge("pm_card_visa")
	occurred := b.clock.Now()
	b.clock.Advance(25 * time.Hour)

	rec, err := acts.ReconcilePayment(ctxT(t), ReconcileInput{Charge: in, FirstAttemptAt: occurred, OccurredAt: occurred})
	require.NoError(t, err)
	require.Equal(t, ReconcileResult{Outcome: NotCharged, Via: "list"}, rec)
	require.Empty(t, b.sim.Ledger().PaymentIntents)
}

// A declined charge is reconciled as declined, not as "not charged" (which
// would make the saga try again).
func TestReconcileDeclined(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	in := newCharge("pm_card_chargeDeclined")
	_, err := acts.ChargePayment(ctxT(t), in)
	requireAppError(t, err, ErrTypePaymentDeclined, true)

	rec, err := acts.ReconcilePayment(ctxT(t), ReconcileInput{Charge: in, FirstAttemptAt: b.clock.Now()})
	require.NoError(t, err)
	require.Equal(t, Declined, rec.Outcome)
}

// A refund retried under its key (an error_500 first, then a lost answer
// replayed) is one refund; a refund after the key expired finds the charge
// already refunded and reports it, still one refund.
func TestRefundIsOnce(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	in := newCharge("pm_card_visa")
	charged, err := acts.ChargePayment(ctxT(t), in)
	require.NoError(t, err)
	rin := RefundInput{ChargeEventID: in.EventID, OrderID: in.OrderID, PaymentIntentID: charged.PaymentIntentID, Amount: in.Amount}

	b.fault(t, providersim.OperationRefundsCreate, "error_500")
	_, err = acts.RefundPayment(ctxT(t), rin)
	require.Error(t, err)
	requireRetryable(t, err)

	first, err := acts.RefundPayment(ctxT(t), rin)
	require.NoError(t, err)
	replay, err := acts.RefundPayment(ctxT(t), rin)
	require.NoError(t, err)
	require.Equal(t, first, replay)

	b.clock.Advance(25 * time.Hour)
	late, err := acts.RefundPayment(ctxT(t), rin)
	require.NoError(t, err)
	require.True(t, late.AlreadyRefunded)

	l := b.sim.Ledger()
	require.Len(t, l.Refunds, 1)
	require.Equal(t, RefundKey(in.EventID), l.Refunds[0].IdempotencyKey)
	require.Equal(t, in.Amount, l.Refunds[0].Amount)
}

// A refund the provider refuses (unknown PaymentIntent) is a non-retryable
// RefundRejected: the workflows' compensation-failure path.
func TestRefundRejected(t *testing.T) {
	t.Parallel()
	acts, _ := setup(t)
	_, err := acts.RefundPayment(ctxT(t), RefundInput{ChargeEventID: "e", OrderID: "o", PaymentIntentID: "pi_missing", Amount: 100})
	requireAppError(t, err, ErrTypeRefundRejected, true)
}

func requireRetryable(t *testing.T, err error) {
	t.Helper()
	var appErr interface{ NonRetryable() bool }
	if ok := asAny(err, &appErr); ok {
		require.False(t, appErr.NonRetryable(), "error: %v", err)
	}
}

// A charge the provider leaves processing is an unknown outcome whose
// details name the PaymentIntent, for the saga to wait for its webhook.
func TestChargeProcessingNamesItsPaymentIntent(t *testing.T) {
	t.Parallel()
	acts, _ := setup(t)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)

	_, err := env.ExecuteActivity(acts.ChargePayment, newCharge("pm_sim_processing"))

	requireAppError(t, err, ErrTypePaymentOutcomeUnknown, false)
	d, ok := PaymentProcessing(err)
	require.True(t, ok, "%v", err)
	require.Regexp(t, `^pi_`, d.PaymentIntentID)
	_, ok = PaymentProcessing(temporal.NewApplicationError("reset", ErrTypePaymentOutcomeUnknown))
	require.False(t, ok, "a lost answer is not a processing charge")
}
