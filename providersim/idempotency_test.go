package providersim_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76"

	"github.com/outflow/outflow/providersim"
)

func TestIdempotentReplayReturnsTheFirstResponse(t *testing.T) {
	t.Parallel()
	b := setup(t)

	first, err := b.stripe.PaymentIntents.New(chargeParams("evt-r:charge", "evt-r", 2500, "pm_card_visa"))
	require.NoError(t, err)
	second, err := b.stripe.PaymentIntents.New(chargeParams("evt-r:charge", "evt-r", 2500, "pm_card_visa"))
	require.NoError(t, err)

	require.Equal(t, first.ID, second.ID)
	require.Equal(t, first.LatestCharge.ID, second.LatestCharge.ID)
	require.Equal(t, "true", second.LastResponse.Header.Get("Idempotent-Replayed"))
	require.Equal(t, first.LastResponse.RequestID, second.LastResponse.Header.Get("Original-Request"))
	require.Equal(t, first.LastResponse.RawJSON, second.LastResponse.RawJSON, "the body is replayed verbatim")
	require.Len(t, b.sim.Ledger().PaymentIntents, 1, "a replay adds no effect")
	require.Equal(t, map[string]int{"payment_intents.create": 1}, b.sim.Stats().Replays)
}

func TestIdempotentReplayOfADecline(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.stripe.PaymentIntents.New(chargeParams("evt-d:charge", "evt-d", 2500, "pm_card_chargeDeclined"))
	first := stripeErr(t, err)
	_, err = b.stripe.PaymentIntents.New(chargeParams("evt-d:charge", "evt-d", 2500, "pm_card_chargeDeclined"))
	second := stripeErr(t, err)

	require.Equal(t, http.StatusPaymentRequired, second.HTTPStatusCode, "errors are replayed too")
	require.Equal(t, stripe.ErrorCodeCardDeclined, second.Code)
	require.Equal(t, first.PaymentIntent.ID, second.PaymentIntent.ID)
	require.Equal(t, "true", second.LastResponse.Header.Get("Idempotent-Replayed"))
	require.Len(t, b.sim.Ledger().PaymentIntents, 1)
}

func TestIdempotencyKeyWithOtherParameters(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.stripe.PaymentIntents.New(chargeParams("evt-m:charge", "evt-m", 2500, "pm_card_visa"))
	require.NoError(t, err)
	_, err = b.stripe.PaymentIntents.New(chargeParams("evt-m:charge", "evt-m", 9900, "pm_card_visa"))
	se := stripeErr(t, err)
	require.Equal(t, http.StatusBadRequest, se.HTTPStatusCode)
	require.Equal(t, stripe.ErrorTypeIdempotency, se.Type)
	var idemErr *stripe.IdempotencyError
	require.True(t, errors.As(err, &idemErr), "stripe-go types it as an IdempotencyError")
	require.Equal(t, providersim.Stats{Replays: map[string]int{}, Rejected: map[string]int{"payment_intents.create": 1}}, b.sim.Stats())

	// The same key on another endpoint is an idempotency error as well.
	refund := &stripe.RefundParams{PaymentIntent: stripe.String("pi_whatever")}
	refund.SetIdempotencyKey("evt-m:charge")
	_, err = b.stripe.Refunds.New(refund)
	se = stripeErr(t, err)
	require.Equal(t, stripe.ErrorTypeIdempotency, se.Type)
	require.Contains(t, se.Msg, "same endpoint")

	require.Len(t, b.sim.Ledger().PaymentIntents, 1)
	require.Empty(t, b.sim.Ledger().Refunds)
}

func TestIdempotencyKeyInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// The first call holds its key for a minute; the test cuts it short by
	// cancelling it once the second call has been turned away.
	require.NoError(t, b.sim.InjectFault(providersim.Fault{
		Operation: providersim.OperationPaymentIntentsCreate, Fault: "latency:1m", Count: 1,
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	firstErr := make(chan error, 1)
	go func() {
		p := chargeParams("evt-f:charge", "evt-f", 2500, "pm_card_visa")
		p.Context = ctx
		_, err := b.stripe.PaymentIntents.New(p)
		firstErr <- err
	}()
	waitForFaultsTaken(t, b.sim)

	_, err := b.stripe.PaymentIntents.New(chargeParams("evt-f:charge", "evt-f", 2500, "pm_card_visa"))
	se := stripeErr(t, err)
	require.Equal(t, http.StatusConflict, se.HTTPStatusCode)
	require.Equal(t, stripe.ErrorTypeIdempotency, se.Type)
	require.Equal(t, stripe.ErrorCodeIdempotencyKeyInUse, se.Code)

	cancel()
	select {
	case err := <-firstErr:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the first call did not end when its context was cancelled")
	}

	// The abandoned call executed nothing and releases its key as soon as
	// the server notices the client left (a moment after the client does):
	// the next attempt with the same key charges once.
	var pi *stripe.PaymentIntent
	require.Eventually(t, func() bool {
		pi, err = b.stripe.PaymentIntents.New(chargeParams("evt-f:charge", "evt-f", 2500, "pm_card_visa"))
		if se := (*stripe.Error)(nil); errors.As(err, &se) && se.HTTPStatusCode == http.StatusConflict {
			return false
		}
		return true
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, err)
	require.Empty(t, pi.LastResponse.Header.Get("Idempotent-Replayed"))
	l := b.sim.Ledger()
	require.Len(t, l.PaymentIntents, 1)
	require.Equal(t, pi.ID, l.PaymentIntents[0].ID)
}

func TestIdempotencyKeyExpiresAfter24Hours(t *testing.T) {
	t.Parallel()
	b := setup(t)

	first, err := b.stripe.PaymentIntents.New(chargeParams("evt-x:charge", "evt-x", 2500, "pm_card_visa"))
	require.NoError(t, err)

	b.clock.Advance(24*time.Hour - time.Second)
	replay, err := b.stripe.PaymentIntents.New(chargeParams("evt-x:charge", "evt-x", 2500, "pm_card_visa"))
	require.NoError(t, err)
	require.Equal(t, first.ID, replay.ID, "still alive one second before 24 hours")

	b.clock.Advance(time.Second)
	fresh, err := b.stripe.PaymentIntents.New(chargeParams("evt-x:charge", "evt-x", 2500, "pm_card_visa"))
	require.NoError(t, err)
	require.NotEqual(t, first.ID, fresh.ID, "after 24 hours the key starts a new request: a second charge")
	require.Empty(t, fresh.LastResponse.Header.Get("Idempotent-Replayed"))

	l := b.sim.Ledger()
	require.Len(t, l.PaymentIntents, 2)
	require.Equal(t, "evt-x:charge", l.PaymentIntents[0].IdempotencyKey)
	require.Equal(t, "evt-x:charge", l.PaymentIntents[1].IdempotencyKey)
}

func TestIdempotencyKeysAreScopedPerAPIKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := newStripe(b.baseURL, b.http, "sk_test_another_account")

	a, err := b.stripe.PaymentIntents.New(chargeParams("shared-key", "evt-s", 2500, "pm_card_visa"))
	require.NoError(t, err)
	c, err := other.PaymentIntents.New(chargeParams("shared-key", "evt-s", 2500, "pm_card_visa"))
	require.NoError(t, err)
	require.NotEqual(t, a.ID, c.ID)
	require.Len(t, b.sim.Ledger().PaymentIntents, 2)
}

func TestValidationErrorsAreNotStored(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// Stripe saves nothing for a request that fails validation: after
	// fixing the request, the same key executes.
	p := chargeParams("evt-v:charge", "evt-v", 2500, "pm_card_visa")
	p.Amount = nil
	_, err := b.stripe.PaymentIntents.New(p)
	require.Equal(t, stripe.ErrorCodeParameterMissing, stripeErr(t, err).Code)

	pi, err := b.stripe.PaymentIntents.New(chargeParams("evt-v:charge", "evt-v", 2500, "pm_card_visa"))
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, pi.Status)
}
