package providersim_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76"
)

func refundParams(key, pi string, amount int64) *stripe.RefundParams {
	p := &stripe.RefundParams{PaymentIntent: stripe.String(pi)}
	if amount > 0 {
		p.Amount = stripe.Int64(amount)
	}
	if key != "" {
		p.SetIdempotencyKey(key)
	}
	p.AddMetadata("event_id", "evt-cancel")
	return p
}

func TestRefundFull(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pi, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-rf", 2500, "pm_card_visa"))
	require.NoError(t, err)

	rf, err := b.stripe.Refunds.New(refundParams("evt-cancel:refund", pi.ID, 0))
	require.NoError(t, err)
	require.Regexp(t, `^re_`, rf.ID)
	require.Equal(t, int64(2500), rf.Amount, "no amount refunds everything")
	require.Equal(t, stripe.RefundStatusSucceeded, rf.Status)
	require.Equal(t, pi.ID, rf.PaymentIntent.ID)
	require.Equal(t, pi.LatestCharge.ID, rf.Charge.ID)
	require.Equal(t, "evt-cancel", rf.Metadata["event_id"])

	_, err = b.stripe.Refunds.New(refundParams("another-key", pi.ID, 0))
	se := stripeErr(t, err)
	require.Equal(t, http.StatusBadRequest, se.HTTPStatusCode)
	require.Equal(t, stripe.ErrorCodeChargeAlreadyRefunded, se.Code)

	got, err := b.stripe.Refunds.Get(rf.ID, nil)
	require.NoError(t, err)
	require.Equal(t, rf.Amount, got.Amount)

	l := b.sim.Ledger()
	require.Len(t, l.Refunds, 1)
	require.Equal(t, rf.ID, l.Refunds[0].ID)
	require.Equal(t, pi.ID, l.Refunds[0].PaymentIntent)
	require.Equal(t, int64(2500), l.Refunds[0].Amount)
	require.Equal(t, "succeeded", l.Refunds[0].Status)
	require.Equal(t, "evt-cancel:refund", l.Refunds[0].IdempotencyKey)
}

func TestRefundPartialNeverExceedsTheCharge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pi, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-part", 2500, "pm_card_visa"))
	require.NoError(t, err)

	first, err := b.stripe.Refunds.New(refundParams("", pi.ID, 1000))
	require.NoError(t, err)
	require.Equal(t, int64(1000), first.Amount)

	_, err = b.stripe.Refunds.New(refundParams("", pi.ID, 1501))
	se := stripeErr(t, err)
	require.Equal(t, stripe.ErrorCodeAmountTooLarge, se.Code, "1500 is left")
	require.Equal(t, "amount", se.Param)

	rest, err := b.stripe.Refunds.New(refundParams("", pi.ID, 0))
	require.NoError(t, err)
	require.Equal(t, int64(1500), rest.Amount, "no amount refunds what is left")

	_, err = b.stripe.Refunds.New(refundParams("", pi.ID, 1))
	require.Equal(t, stripe.ErrorCodeChargeAlreadyRefunded, stripeErr(t, err).Code)

	expanded := &stripe.PaymentIntentParams{}
	expanded.AddExpand("latest_charge")
	got, err := b.stripe.PaymentIntents.Get(pi.ID, expanded)
	require.NoError(t, err)
	require.Equal(t, int64(2500), got.LatestCharge.AmountRefunded)
	require.True(t, got.LatestCharge.Refunded)

	list := &stripe.RefundListParams{PaymentIntent: stripe.String(pi.ID)}
	it := b.stripe.Refunds.List(list)
	var ids []string
	for it.Next() {
		ids = append(ids, it.Refund().ID)
	}
	require.NoError(t, it.Err())
	require.Equal(t, []string{rest.ID, first.ID}, ids)

	var total int64
	for _, r := range b.sim.Ledger().Refunds {
		total += r.Amount
	}
	require.Equal(t, int64(2500), total)
}

func TestRefundReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pi, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-rr", 2500, "pm_card_visa"))
	require.NoError(t, err)

	first, err := b.stripe.Refunds.New(refundParams("evt-rr:refund", pi.ID, 0))
	require.NoError(t, err)
	second, err := b.stripe.Refunds.New(refundParams("evt-rr:refund", pi.ID, 0))
	require.NoError(t, err, "a replay of a full refund is the refund, not charge_already_refunded")
	require.Equal(t, first.ID, second.ID)
	require.Equal(t, "true", second.LastResponse.Header.Get("Idempotent-Replayed"))
	require.Len(t, b.sim.Ledger().Refunds, 1)
}

func TestRefundOfADeclinedOrUnknownPaymentIntent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-rd", 2500, "pm_card_chargeDeclined"))
	declined := stripeErr(t, err).PaymentIntent

	_, err = b.stripe.Refunds.New(refundParams("", declined.ID, 0))
	se := stripeErr(t, err)
	require.Equal(t, stripe.ErrorTypeInvalidRequest, se.Type)
	require.Contains(t, se.Msg, "does not have a successful charge")

	_, err = b.stripe.Refunds.New(refundParams("", "pi_missing", 0))
	require.Equal(t, stripe.ErrorCodeResourceMissing, stripeErr(t, err).Code)
	require.Empty(t, b.sim.Ledger().Refunds)
}
