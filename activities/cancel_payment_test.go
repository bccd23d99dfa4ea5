package activities

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76"

	"github.com/outflow/outflow/providersim"
)

// A 3-D Secure charge is not a decline: its outcome is unknown, with the
// PaymentIntent and the worker's authentication deadline in the details.
func TestChargeRequiresActionWaitsForTheCustomer(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	acts.AuthenticationTimeout = 7 * time.Minute
	for _, pm := range []string{"pm_card_authenticationRequired", "pm_card_threeDSecure2Required"} {
		_, err := acts.ChargePayment(ctxT(t), newCharge(pm))
		requireAppError(t, err, ErrTypePaymentOutcomeUnknown, false)
		require.False(t, IsPaymentDeclined(err))
		d, ok := PaymentRequiresAction(err)
		require.True(t, ok, pm)
		require.Equal(t, 7*time.Minute, d.AuthenticationTimeout)
		_, processing := PaymentProcessing(err)
		require.False(t, processing)
		l := b.sim.Ledger().PaymentIntents
		require.Equal(t, d.PaymentIntentID, l[len(l)-1].ID)
		require.Equal(t, "requires_action", l[len(l)-1].Status)
	}
	acts.AuthenticationTimeout = 0
	_, err := acts.ChargePayment(ctxT(t), newCharge("pm_card_authenticationRequired"))
	d, _ := PaymentRequiresAction(err)
	require.Equal(t, DefaultAuthenticationTimeout, d.AuthenticationTimeout, "the default")
}

// Reconciling a 3-D Secure charge replays its key, which answers
// requires_action forever, so it asks the PaymentIntent as it is now.
func TestReconcileRequiresActionReadsTheIntentNow(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	for _, c := range []struct {
		outcome string
		want    ReconcileOutcome
	}{{"", AwaitingAuthentication}, {providersim.OutcomeSucceeded, Charged}, {providersim.OutcomeFailed, Declined}} {
		in := newCharge("pm_card_authenticationRequired")
		started := b.clock.Now()
		_, err := acts.ChargePayment(ctxT(t), in)
		d, ok := PaymentRequiresAction(err)
		require.True(t, ok)
		if c.outcome != "" {
			require.NoError(t, b.sim.Authenticate(d.PaymentIntentID, c.outcome))
		}
		rec, err := acts.ReconcilePayment(ctxT(t), ReconcileInput{Charge: in, FirstAttemptAt: started})
		require.NoError(t, err)
		require.Equal(t, c.want, rec.Outcome, c.outcome)
		require.Equal(t, d.PaymentIntentID, rec.PaymentIntentID)
		if c.want == AwaitingAuthentication {
			require.Equal(t, DefaultAuthenticationTimeout, rec.AuthenticationTimeout)
		}
	}
}

func TestCancelPayment(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	in := newCharge("pm_card_authenticationRequired")
	_, err := acts.ChargePayment(ctxT(t), in)
	d, ok := PaymentRequiresAction(err)
	require.True(t, ok)
	cin := CancelPaymentInput{EventID: in.EventID, OrderID: in.OrderID, PaymentIntentID: d.PaymentIntentID}

	res, err := acts.CancelPayment(ctxT(t), cin)
	require.NoError(t, err)
	require.Equal(t, CancelPaymentResult{PaymentIntentID: d.PaymentIntentID, Status: "canceled"}, res)
	require.False(t, res.Succeeded())
	again, err := acts.CancelPayment(ctxT(t), cin)
	require.NoError(t, err, "a retry replays")
	require.Equal(t, res, again)

	pi, err := acts.Stripe.PaymentIntents.Get(d.PaymentIntentID, nil)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusCanceled, pi.Status)
	require.Equal(t, stripe.PaymentIntentCancellationReasonAbandoned, pi.CancellationReason)
	require.Error(t, b.sim.Authenticate(d.PaymentIntentID, providersim.OutcomeSucceeded), "too late for the customer")
	require.Equal(t, "canceled", b.sim.Ledger().PaymentIntents[0].Status)
}

// The customer authenticated just before the deadline: the cancel answers
// payment_intent_unexpected_state, which is the payment made, not an error.
func TestCancelPaymentFindsItSucceeded(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	in := newCharge("pm_card_authenticationRequired")
	_, err := acts.ChargePayment(ctxT(t), in)
	d, _ := PaymentRequiresAction(err)
	require.NoError(t, b.sim.Authenticate(d.PaymentIntentID, providersim.OutcomeSucceeded))

	res, err := acts.CancelPayment(ctxT(t), CancelPaymentInput{EventID: in.EventID, OrderID: in.OrderID, PaymentIntentID: d.PaymentIntentID})
	require.NoError(t, err)
	require.True(t, res.Succeeded())
	require.Equal(t, in.Amount, res.Amount)
	require.Equal(t, "succeeded", b.sim.Ledger().PaymentIntents[0].Status)
}

// A 500 stored under the key would be replayed to every retry; the
// activity looks at the PaymentIntent and cancels without the key.
func TestCancelPaymentAfterAStored500(t *testing.T) {
	t.Parallel()
	acts, b := setup(t)
	in := newCharge("pm_card_authenticationRequired")
	_, err := acts.ChargePayment(ctxT(t), in)
	d, _ := PaymentRequiresAction(err)
	cin := CancelPaymentInput{EventID: in.EventID, OrderID: in.OrderID, PaymentIntentID: d.PaymentIntentID}
	b.fault(t, providersim.OperationPaymentIntentsCancel, "error_500")

	_, err = acts.CancelPayment(ctxT(t), cin)
	require.Error(t, err, "the 500 and a PaymentIntent still requiring action: unknown")
	res, err := acts.CancelPayment(ctxT(t), cin)
	require.NoError(t, err, "the retry sees the stored 500 replayed and cancels without the key")
	require.Equal(t, "canceled", res.Status)
}

func TestCancelPaymentOfNoSuchIntentIsRejected(t *testing.T) {
	t.Parallel()
	acts, _ := setup(t)
	_, err := acts.CancelPayment(ctxT(t), CancelPaymentInput{EventID: "e", OrderID: "o", PaymentIntentID: "pi_nope"})
	requireAppError(t, err, ErrTypePaymentRejected, true)
}
