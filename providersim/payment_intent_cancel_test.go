package providersim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76"

	"github.com/outflow/outflow/providersim"
)

// cancelParams is a cancel under key with reason (none when empty).
func cancelParams(key, reason string) *stripe.PaymentIntentCancelParams {
	p := &stripe.PaymentIntentCancelParams{}
	if reason != "" {
		p.CancellationReason = stripe.String(reason)
	}
	if key != "" {
		p.SetIdempotencyKey(key)
	}
	return p
}

func TestThreeDSecureNextAction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for pm, inner := range map[string]string{
		"pm_card_authenticationRequired": "three_d_secure_redirect",
		"pm_card_threeDSecure2Required":  "stripe_3ds2_fingerprint",
	} {
		pi, err := b.stripe.PaymentIntents.New(chargeParams("k-"+pm, "evt-"+pm, 2500, pm))
		require.NoError(t, err)
		require.Equal(t, stripe.PaymentIntentStatusRequiresAction, pi.Status, pm)
		require.Nil(t, pi.LatestCharge, "%s: no charge before the customer authenticates", pm)
		require.NotNil(t, pi.NextAction, pm)
		require.Equal(t, stripe.PaymentIntentNextActionType("use_stripe_sdk"), pi.NextAction.Type, pm)
		require.NotNil(t, pi.NextAction.UseStripeSDK, pm)
		var raw struct {
			NextAction struct {
				UseStripeSDK map[string]any `json:"use_stripe_sdk"`
			} `json:"next_action"`
		}
		require.NoError(t, json.Unmarshal(pi.LastResponse.RawJSON, &raw))
		require.Equal(t, inner, raw.NextAction.UseStripeSDK["type"], pm) // stripe-go keeps the hash opaque
	}
}

func TestCancelEachStatus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	sim := &providersim.Client{BaseURL: b.baseURL}

	tds, err := b.stripe.PaymentIntents.New(chargeParams("k-3ds", "evt-3ds", 2500, "pm_card_authenticationRequired"))
	require.NoError(t, err)
	proc, err := b.stripe.PaymentIntents.New(chargeParams("k-proc", "evt-proc", 2500, "pm_sim_processing"))
	require.NoError(t, err)
	unconfirmed := chargeParams("k-unconf", "evt-unconf", 2500, "pm_card_visa")
	unconfirmed.Confirm = nil
	unconf, err := b.stripe.PaymentIntents.New(unconfirmed)
	require.NoError(t, err)
	_, err = b.stripe.PaymentIntents.New(chargeParams("k-no", "evt-no", 2500, "pm_card_chargeDeclined"))
	declined := stripeErr(t, err).PaymentIntent

	for _, c := range []struct {
		pi     *stripe.PaymentIntent
		status stripe.PaymentIntentStatus
	}{
		{tds, stripe.PaymentIntentStatusRequiresAction},
		{proc, stripe.PaymentIntentStatusProcessing},
		{unconf, stripe.PaymentIntentStatusRequiresConfirmation},
		{declined, stripe.PaymentIntentStatusRequiresPaymentMethod},
	} {
		require.Equal(t, c.status, c.pi.Status)
		got, err := b.stripe.PaymentIntents.Cancel(c.pi.ID, cancelParams("cancel-"+c.pi.ID, "abandoned"))
		require.NoError(t, err, c.status)
		require.Equal(t, stripe.PaymentIntentStatusCanceled, got.Status, c.status)
		require.Equal(t, stripe.PaymentIntentCancellationReasonAbandoned, got.CancellationReason, c.status)
		require.NotZero(t, got.CanceledAt, c.status)
		require.Zero(t, got.AmountReceived, c.status)
	}

	// Nothing left to authenticate or settle, and no reason is null.
	require.Error(t, sim.Authenticate(ctx, tds.ID, providersim.OutcomeSucceeded))
	require.Error(t, sim.Settle(ctx, proc.ID, providersim.OutcomeSucceeded))
	_, err = b.stripe.Refunds.New(refundParams("k-proc-rf", proc.ID, 0))
	stripeErr(t, err) // the pending charge failed with the cancel
	tds2, err := b.stripe.PaymentIntents.New(chargeParams("k-3ds2", "evt-3ds2", 2500, "pm_card_threeDSecure2Required"))
	require.NoError(t, err)
	got, err := b.stripe.PaymentIntents.Cancel(tds2.ID, nil)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusCanceled, got.Status)
	require.Empty(t, got.CancellationReason)

	for _, l := range b.sim.Ledger().PaymentIntents {
		require.Equal(t, "canceled", l.Status, l.ID)
	}
}

func TestCancelUnexpectedState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ok, err := b.stripe.PaymentIntents.New(chargeParams("k-ok", "evt-ok", 2500, "pm_card_visa"))
	require.NoError(t, err)
	se := stripeErr(t, func() error { _, err := b.stripe.PaymentIntents.Cancel(ok.ID, cancelParams("c-ok", "")); return err }())
	require.Equal(t, http.StatusBadRequest, se.HTTPStatusCode)
	require.Equal(t, stripe.ErrorTypeInvalidRequest, se.Type)
	require.Equal(t, stripe.ErrorCodePaymentIntentUnexpectedState, se.Code)
	require.Equal(t, "You cannot cancel this PaymentIntent because it has a status of succeeded. Only a PaymentIntent "+
		"with one of the following statuses may be canceled: requires_payment_method, requires_capture, "+
		"requires_confirmation, requires_action, processing.", se.Msg)
	require.NotNil(t, se.PaymentIntent, "the error embeds the PaymentIntent as it is")
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, se.PaymentIntent.Status)

	tds, err := b.stripe.PaymentIntents.New(chargeParams("k-3ds", "evt-3ds", 2500, "pm_card_authenticationRequired"))
	require.NoError(t, err)
	_, err = b.stripe.PaymentIntents.Cancel(tds.ID, cancelParams("", ""))
	require.NoError(t, err)
	se = stripeErr(t, func() error { _, err := b.stripe.PaymentIntents.Cancel(tds.ID, nil); return err }())
	require.Equal(t, stripe.ErrorCodePaymentIntentUnexpectedState, se.Code, "canceled is final")
	require.Contains(t, se.Msg, "it has a status of canceled")

	se = stripeErr(t, func() error { _, err := b.stripe.PaymentIntents.Cancel("pi_nope", nil); return err }())
	require.Equal(t, http.StatusNotFound, se.HTTPStatusCode)
	se = stripeErr(t, func() error {
		_, err := b.stripe.PaymentIntents.Cancel(ok.ID, cancelParams("", "because"))
		return err
	}())
	require.Equal(t, "cancellation_reason", se.Param)
}

func TestCancelIdempotency(t *testing.T) {
	t.Parallel()
	b, ep := setupWebhooks(t, 0)
	ctx := context.Background()
	sim := &providersim.Client{BaseURL: b.baseURL}
	tds, err := b.stripe.PaymentIntents.New(chargeParams("k-3ds", "evt-3ds", 2500, "pm_card_authenticationRequired"))
	require.NoError(t, err)
	waitEvents(t, ep, 1) // requires_action

	first, err := b.stripe.PaymentIntents.Cancel(tds.ID, cancelParams("evt-3ds:cancel", "abandoned"))
	require.NoError(t, err)
	again, err := b.stripe.PaymentIntents.Cancel(tds.ID, cancelParams("evt-3ds:cancel", "abandoned"))
	require.NoError(t, err, "the same key replays the first answer")
	require.Equal(t, first.CanceledAt, again.CanceledAt)
	require.Equal(t, "true", again.LastResponse.Header.Get("Idempotent-Replayed"))
	ev := waitEvents(t, ep, 2)[1]
	require.Equal(t, providersim.EventPaymentIntentCanceled, string(ev.Type), "one event for the cancel and its replay")
	require.Equal(t, "abandoned", ev.Data.Object["cancellation_reason"])

	_, err = b.stripe.PaymentIntents.Cancel(tds.ID, cancelParams("evt-3ds:cancel", "duplicate"))
	require.Equal(t, stripe.ErrorTypeIdempotency, stripeErr(t, err).Type, "other parameters under the key")
	other, err := b.stripe.PaymentIntents.New(chargeParams("k-3ds-b", "evt-3ds-b", 2500, "pm_card_authenticationRequired"))
	require.NoError(t, err)
	_, err = b.stripe.PaymentIntents.Cancel(other.ID, cancelParams("evt-3ds:cancel", "abandoned"))
	require.Equal(t, stripe.ErrorTypeIdempotency, stripeErr(t, err).Type, "the key of another PaymentIntent's cancel")

	// A cancel that loses the race with the customer: the 400 is stored and
	// replayed too, and says the PaymentIntent succeeded.
	require.NoError(t, sim.Authenticate(ctx, other.ID, providersim.OutcomeSucceeded))
	for range 2 {
		_, err = b.stripe.PaymentIntents.Cancel(other.ID, cancelParams("evt-3ds-b:cancel", "abandoned"))
		se := stripeErr(t, err)
		require.Equal(t, stripe.ErrorCodePaymentIntentUnexpectedState, se.Code)
		require.Equal(t, stripe.PaymentIntentStatusSucceeded, se.PaymentIntent.Status)
	}
}

func TestCancelFaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tds, err := b.stripe.PaymentIntents.New(chargeParams("k-3ds", "evt-3ds", 2500, "pm_card_authenticationRequired"))
	require.NoError(t, err)
	require.NoError(t, b.sim.InjectFault(providersim.Fault{Operation: providersim.OperationPaymentIntentsCancel, Fault: "error_500"}))
	_, err = b.stripe.PaymentIntents.Cancel(tds.ID, cancelParams("c-1", "abandoned"))
	require.Equal(t, http.StatusInternalServerError, stripeErr(t, err).HTTPStatusCode)
	got, err := b.stripe.PaymentIntents.Get(tds.ID, nil)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusRequiresAction, got.Status, "a 500 fault cancels nothing")
	_, err = b.stripe.PaymentIntents.Cancel(tds.ID, cancelParams("c-2", "abandoned"))
	require.NoError(t, err)
}
