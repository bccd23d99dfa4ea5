package providersim_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76"
)

func TestPaymentIntentCreateSucceeded(t *testing.T) {
	t.Parallel()
	b := setup(t)

	params := chargeParams("evt-1:charge", "evt-1", 2500, "pm_card_visa")
	params.Description = stripe.String("order order-evt-1")
	params.ReceiptEmail = stripe.String("buyer@example.com")
	params.AddExpand("latest_charge")
	pi, err := b.stripe.PaymentIntents.New(params)
	require.NoError(t, err)

	require.Regexp(t, `^pi_\w{24}$`, pi.ID)
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, pi.Status)
	require.Equal(t, int64(2500), pi.Amount)
	require.Equal(t, int64(2500), pi.AmountReceived)
	require.Equal(t, stripe.CurrencyUSD, pi.Currency)
	require.Equal(t, map[string]string{"event_id": "evt-1", "order_id": "order-evt-1"}, pi.Metadata)
	require.Equal(t, "order order-evt-1", pi.Description)
	require.Equal(t, "buyer@example.com", pi.ReceiptEmail)
	require.Equal(t, b.clock.Now().Unix(), pi.Created)
	require.NotNil(t, pi.PaymentMethod)
	require.Regexp(t, `^pm_`, pi.PaymentMethod.ID)
	require.NotNil(t, pi.LatestCharge)
	require.Regexp(t, `^ch_`, pi.LatestCharge.ID)
	require.Equal(t, stripe.ChargeStatusSucceeded, pi.LatestCharge.Status, "latest_charge is expanded")
	require.Equal(t, int64(2500), pi.LatestCharge.AmountCaptured)
	require.True(t, pi.LatestCharge.Paid)
	require.Equal(t, "evt-1:charge", pi.LastResponse.IdempotencyKey, "the key is echoed, as Stripe does")
	require.NotEmpty(t, pi.LastResponse.RequestID)
	require.Empty(t, pi.LastResponse.Header.Get("Idempotent-Replayed"))

	got, err := b.stripe.PaymentIntents.Get(pi.ID, nil)
	require.NoError(t, err)
	require.Equal(t, pi.ID, got.ID)
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, got.Status)
	require.Equal(t, pi.LatestCharge.ID, got.LatestCharge.ID, "not expanded: only the id")
	require.Empty(t, got.LatestCharge.Status)

	l := b.sim.Ledger()
	require.Len(t, l.PaymentIntents, 1)
	require.Equal(t, pi.ID, l.PaymentIntents[0].ID)
	require.Equal(t, "succeeded", l.PaymentIntents[0].Status)
	require.Equal(t, "evt-1:charge", l.PaymentIntents[0].IdempotencyKey)
	require.Equal(t, "evt-1", l.PaymentIntents[0].Metadata["event_id"])
	require.Equal(t, int64(2500), l.PaymentIntents[0].Amount)
	require.Equal(t, "usd", l.PaymentIntents[0].Currency)
}

func TestPaymentIntentDeclined(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.stripe.PaymentIntents.New(chargeParams("evt-2:charge", "evt-2", 2500, "pm_card_chargeDeclined"))
	se := stripeErr(t, err)
	require.Equal(t, http.StatusPaymentRequired, se.HTTPStatusCode)
	require.Equal(t, stripe.ErrorTypeCard, se.Type)
	require.Equal(t, stripe.ErrorCodeCardDeclined, se.Code)
	require.Equal(t, stripe.DeclineCode("generic_decline"), se.DeclineCode)
	require.Equal(t, "Your card was declined.", se.Msg)
	require.Regexp(t, `^ch_`, se.ChargeID)
	var cardErr *stripe.CardError
	require.True(t, errors.As(err, &cardErr), "stripe-go types it as a CardError")
	require.Equal(t, stripe.DeclineCode("generic_decline"), cardErr.DeclineCode)

	// The declined PaymentIntent exists and is embedded in the error, so the
	// caller can record it without another request.
	require.NotNil(t, se.PaymentIntent)
	require.Regexp(t, `^pi_`, se.PaymentIntent.ID)
	require.Equal(t, stripe.PaymentIntentStatusRequiresPaymentMethod, se.PaymentIntent.Status)
	require.Equal(t, "evt-2", se.PaymentIntent.Metadata["event_id"])
	require.Nil(t, se.PaymentIntent.PaymentMethod, "Stripe detaches a declined card")
	require.NotNil(t, se.PaymentIntent.LastPaymentError)
	require.Equal(t, stripe.ErrorCodeCardDeclined, se.PaymentIntent.LastPaymentError.Code)
	require.NotNil(t, se.PaymentMethod)
	require.Equal(t, "0002", se.PaymentMethod.Card.Last4)

	got, err := b.stripe.PaymentIntents.Get(se.PaymentIntent.ID, nil)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusRequiresPaymentMethod, got.Status)
	require.Equal(t, stripe.DeclineCode("generic_decline"), got.LastPaymentError.DeclineCode)

	l := b.sim.Ledger()
	require.Len(t, l.PaymentIntents, 1)
	require.Equal(t, se.PaymentIntent.ID, l.PaymentIntents[0].ID)
	require.Equal(t, "requires_payment_method", l.PaymentIntents[0].Status)
}

func TestPaymentIntentDeclinedInsufficientFunds(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-nsf", 2500, "pm_card_chargeDeclinedInsufficientFunds"))
	se := stripeErr(t, err)
	require.Equal(t, stripe.ErrorCodeCardDeclined, se.Code)
	require.Equal(t, stripe.DeclineCode("insufficient_funds"), se.DeclineCode)
}

func TestPaymentIntentCreateRejectsInvalidRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)

	tests := []struct {
		name   string
		params func() *stripe.PaymentIntentParams
		code   stripe.ErrorCode
		param  string
	}{
		{"unknown payment method", func() *stripe.PaymentIntentParams {
			return chargeParams("", "e", 2500, "pm_card_doesNotExist")
		}, stripe.ErrorCodeResourceMissing, "payment_method"},
		{"missing amount", func() *stripe.PaymentIntentParams {
			p := chargeParams("", "e", 2500, "pm_card_visa")
			p.Amount = nil
			return p
		}, stripe.ErrorCodeParameterMissing, "amount"},
		{"amount under the currency minimum", func() *stripe.PaymentIntentParams {
			return chargeParams("", "e", 10, "pm_card_visa")
		}, stripe.ErrorCodeAmountTooSmall, "amount"},
		{"unsupported parameter", func() *stripe.PaymentIntentParams {
			p := chargeParams("", "e", 2500, "pm_card_visa")
			p.SetupFutureUsage = stripe.String("off_session")
			return p
		}, stripe.ErrorCodeParameterUnknown, "setup_future_usage"},
	}
	for _, tt := range tests {
		_, err := b.stripe.PaymentIntents.New(tt.params())
		se := stripeErr(t, err)
		require.Equal(t, http.StatusBadRequest, se.HTTPStatusCode, tt.name)
		require.Equal(t, stripe.ErrorTypeInvalidRequest, se.Type, tt.name)
		require.Equal(t, tt.code, se.Code, tt.name)
		require.Equal(t, tt.param, se.Param, tt.name)
	}
	require.Empty(t, b.sim.Ledger().PaymentIntents, "a rejected request creates nothing")
}

func TestPaymentIntentWithoutConfirm(t *testing.T) {
	t.Parallel()
	b := setup(t)

	p := chargeParams("", "evt-nc", 2500, "pm_card_visa")
	p.Confirm = nil
	pi, err := b.stripe.PaymentIntents.New(p)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusRequiresConfirmation, pi.Status)
	require.Nil(t, pi.LatestCharge, "nothing was charged")
}

func TestPaymentIntentRetrieveMissing(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.stripe.PaymentIntents.Get("pi_doesnotexist", nil)
	se := stripeErr(t, err)
	require.Equal(t, http.StatusNotFound, se.HTTPStatusCode)
	require.Equal(t, stripe.ErrorCodeResourceMissing, se.Code)
}

func TestPaymentIntentListByCreatedRange(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// Five charges ten seconds apart; the window covers the 2nd to the 4th.
	var ids []string
	var created []int64
	for i := range 5 {
		pi, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-list-"+string(rune('a'+i)), 1000, "pm_card_visa"))
		require.NoError(t, err)
		ids = append(ids, pi.ID)
		created = append(created, pi.Created)
		b.clock.Advance(10 * time.Second)
	}
	window := &stripe.RangeQueryParams{GreaterThanOrEqual: created[1], LesserThanOrEqual: created[3]}

	// One page of two: the newest two of the window, has_more set.
	first := &stripe.PaymentIntentListParams{CreatedRange: window}
	first.Limit = stripe.Int64(2)
	first.Single = true
	it := b.stripe.PaymentIntents.List(first)
	var page []string
	for it.Next() {
		page = append(page, it.PaymentIntent().ID)
	}
	require.NoError(t, it.Err())
	require.Equal(t, []string{ids[3], ids[2]}, page, "newest first")
	require.True(t, it.PaymentIntentList().HasMore)

	// The iterator follows starting_after through every page.
	all := &stripe.PaymentIntentListParams{CreatedRange: window}
	all.Limit = stripe.Int64(2)
	it = b.stripe.PaymentIntents.List(all)
	var got []string
	for it.Next() {
		got = append(got, it.PaymentIntent().ID)
	}
	require.NoError(t, it.Err())
	require.Equal(t, []string{ids[3], ids[2], ids[1]}, got)

	// Objects created in the same second keep their creation order.
	a, err := b.stripe.PaymentIntents.New(chargeParams("", "same-1", 1000, "pm_card_visa"))
	require.NoError(t, err)
	c, err := b.stripe.PaymentIntents.New(chargeParams("", "same-2", 1000, "pm_card_visa"))
	require.NoError(t, err)
	exact := &stripe.PaymentIntentListParams{Created: stripe.Int64(a.Created)}
	it = b.stripe.PaymentIntents.List(exact)
	got = nil
	for it.Next() {
		got = append(got, it.PaymentIntent().ID)
	}
	require.NoError(t, it.Err())
	require.Equal(t, []string{c.ID, a.ID}, got)
}
