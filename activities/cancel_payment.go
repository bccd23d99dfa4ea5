package activities

import (
	"context"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v76"
	"go.temporal.io/sdk/temporal"
)

// DefaultAuthenticationTimeout is [Config.AuthenticationTimeout]'s default:
// how long the saga waits for a customer to complete 3-D Secure before it
// cancels the PaymentIntent. Stripe's own challenge pages time out within
// minutes; fifteen leave a slow bank's app room without holding stock for
// an order nobody pays.
const DefaultAuthenticationTimeout = 15 * time.Minute

// PaymentRequiresAction returns the details of err (as returned by an
// activity future) when it is the error of a charge waiting for the
// customer's 3-D Secure authentication (status requires_action).
// AuthenticationTimeout is the worker's setting, recorded with the error so
// a replay waits as long as the run did.
func PaymentRequiresAction(err error) (PaymentProcessingDetails, bool) {
	d, ok := paymentPending(err)
	return d, ok && d.PaymentIntentID != "" && d.Status == string(stripe.PaymentIntentStatusRequiresAction)
}

func (a *Activities) authenticationTimeout() time.Duration {
	if a.AuthenticationTimeout > 0 {
		return a.AuthenticationTimeout
	}
	return DefaultAuthenticationTimeout
}

// CancelPaymentInput names the PaymentIntent the saga gives up on.
type CancelPaymentInput struct {
	// EventID is the OrderCreated event's id, the key's seed ([CancelPaymentKey]).
	EventID         string `json:"event_id"`
	OrderID         string `json:"order_id"`
	PaymentIntentID string `json:"payment_intent_id"`
}

// CancelPaymentResult is where the PaymentIntent ended: canceled (nothing
// was charged, and nothing can be any more) or succeeded (the customer
// completed the payment before the cancel reached the provider: the order
// is paid).
type CancelPaymentResult struct {
	PaymentIntentID string `json:"payment_intent_id"`
	Status          string `json:"status"`
	Amount          int64  `json:"amount,omitempty"`
}

// Succeeded reports that the cancel found the payment made.
func (r CancelPaymentResult) Succeeded() bool {
	return r.Status == string(stripe.PaymentIntentStatusSucceeded)
}

// CancelPayment cancels a PaymentIntent that has not charged (the saga's
// 3-D Secure deadline passed) under [CancelPaymentKey], with
// cancellation_reason abandoned. It is idempotent by the PaymentIntent's
// state as well as by its key: a PaymentIntent already canceled is the
// answer wanted, and one that succeeded (Stripe's 400
// payment_intent_unexpected_state, which carries the PaymentIntent) is
// reported as succeeded, never as an error, because the money moved. An
// unclear answer is checked against the PaymentIntent itself; if that
// cannot settle it, the error is retryable. A rejected request (no such
// PaymentIntent, bad parameters) is a non-retryable PaymentRejected.
func (a *Activities) CancelPayment(ctx context.Context, in CancelPaymentInput) (CancelPaymentResult, error) {
	if a.Stripe == nil {
		return CancelPaymentResult{}, errNoStripe
	}
	key := CancelPaymentKey(in.EventID)
	pi, err := a.Stripe.PaymentIntents.Cancel(in.PaymentIntentID, cancelParams(ctx, key))
	if err == nil {
		return cancelResult(pi)
	}
	se, isStripe := stripeErr(err)
	if isStripe && se.Code == stripe.ErrorCodePaymentIntentUnexpectedState && se.PaymentIntent != nil {
		return cancelResult(se.PaymentIntent)
	}
	if isStripe && se.Type == stripe.ErrorTypeInvalidRequest && se.HTTPStatusCode < 500 && se.HTTPStatusCode != 409 && se.HTTPStatusCode != 429 {
		return CancelPaymentResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("cancel of payment intent %s rejected (HTTP %d, %s): %s", in.PaymentIntentID, se.HTTPStatusCode, se.Code, se.Msg),
			ErrTypePaymentRejected, err)
	}
	// A timeout, a 5xx, a key in flight: the PaymentIntent itself says
	// whether the cancel (or the customer) got there.
	gp := &stripe.PaymentIntentParams{}
	gp.Context = ctx
	cur, gerr := a.Stripe.PaymentIntents.Get(in.PaymentIntentID, gp)
	if gerr != nil {
		return CancelPaymentResult{}, fmt.Errorf("cancel of payment intent %s: outcome unknown (%v), and retrieving it failed: %w", in.PaymentIntentID, err, gerr)
	}
	if r, err := cancelResult(cur); err == nil {
		return r, nil
	}
	if isStripe && se.HTTPStatusCode >= 500 && replayed(se) {
		// The key holds a 5xx, which every retry under it would replay.
		// Cancelling is idempotent by state, so a request without the key
		// is as safe: a second cancel finds the PaymentIntent canceled.
		p := cancelParams(ctx, "")
		if pi, err := a.Stripe.PaymentIntents.Cancel(in.PaymentIntentID, p); err == nil {
			return cancelResult(pi)
		} else if se, ok := stripeErr(err); ok && se.Code == stripe.ErrorCodePaymentIntentUnexpectedState && se.PaymentIntent != nil {
			return cancelResult(se.PaymentIntent)
		}
	}
	return CancelPaymentResult{}, fmt.Errorf("cancel of payment intent %s: outcome unknown, still %s: %w", in.PaymentIntentID, cur.Status, err)
}

func cancelParams(ctx context.Context, key string) *stripe.PaymentIntentCancelParams {
	p := &stripe.PaymentIntentCancelParams{
		CancellationReason: stripe.String(string(stripe.PaymentIntentCancellationReasonAbandoned)),
	}
	p.Context = ctx
	if key != "" {
		p.IdempotencyKey = stripe.String(key)
	}
	return p
}

// cancelResult is pi's result if it is final (canceled or succeeded).
func cancelResult(pi *stripe.PaymentIntent) (CancelPaymentResult, error) {
	r := CancelPaymentResult{PaymentIntentID: pi.ID, Status: string(pi.Status), Amount: pi.AmountReceived}
	switch pi.Status {
	case stripe.PaymentIntentStatusCanceled, stripe.PaymentIntentStatusSucceeded:
		return r, nil
	}
	return r, fmt.Errorf("payment intent %s is %s after the cancel", pi.ID, pi.Status)
}
