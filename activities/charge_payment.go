package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v76"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/outbox/failpoints"
)

// ChargeInput is what a charge needs. Every field goes into the provider
// request, so it must be identical on every retry and every reconciliation
// replay: a changed parameter under the same key is an idempotency_error.
type ChargeInput struct {
	// EventID is the OrderCreated event's id: the key's seed and the
	// metadata reconciliation searches by.
	EventID       string `json:"event_id"`
	OrderID       string `json:"order_id"`
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	PaymentMethod string `json:"payment_method"`
}

// ChargeResult is a succeeded charge.
type ChargeResult struct {
	PaymentIntentID string `json:"payment_intent_id"`
}

// Metadata keys every PaymentIntent carries, so reconciliation can find the
// charge of an event without knowing its id.
const (
	MetadataEventID = "event_id"
	MetadataOrderID = "order_id"
)

// ChargePayment creates and confirms a PaymentIntent for the order, under
// [ChargeKey]. It returns the PaymentIntent id when the charge succeeded, a
// non-retryable PaymentDeclined error when the card was declined, and a
// PaymentOutcomeUnknown error when the answer was lost (see classifyCharge)
// or is not final yet: processing, or requires_action for 3-D Secure, whose
// details ([PaymentRequiresAction]) carry the authentication deadline.
func (a *Activities) ChargePayment(ctx context.Context, in ChargeInput) (ChargeResult, error) {
	if a.Stripe == nil {
		return ChargeResult{}, errNoStripe
	}
	key := ChargeKey(in.EventID)
	pi, err := a.Stripe.PaymentIntents.New(chargeParams(ctx, in, key))
	if err != nil {
		return ChargeResult{}, classifyCharge(err, key)
	}
	// The provider has accepted (and stored) the charge; a crash here is the
	// window reconciliation exists for.
	if err := a.failpoint(ctx, failpoints.ActivityPaymentAfterProvider); err != nil {
		return ChargeResult{}, temporal.NewApplicationErrorWithCause(
			"payment outcome unknown: "+err.Error(), ErrTypePaymentOutcomeUnknown, err)
	}
	return chargeOutcome(pi, key, a.authenticationTimeout())
}

// chargeParams builds the create request. It is shared by ChargePayment and
// the reconciliation replay, which must send byte-for-byte the same
// parameters.
func chargeParams(ctx context.Context, in ChargeInput, key string) *stripe.PaymentIntentParams {
	p := &stripe.PaymentIntentParams{
		Amount:        stripe.Int64(in.Amount),
		Currency:      stripe.String(in.Currency),
		PaymentMethod: stripe.String(in.PaymentMethod),
		Confirm:       stripe.Bool(true),
		// Card only: a server-side confirm has no customer to redirect, and
		// real Stripe demands a return_url for redirect-based methods.
		PaymentMethodTypes: stripe.StringSlice([]string{"card"}),
	}
	p.Context = ctx
	p.IdempotencyKey = stripe.String(key)
	p.AddMetadata(MetadataEventID, in.EventID)
	p.AddMetadata(MetadataOrderID, in.OrderID)
	return p
}

// chargeOutcome interprets a PaymentIntent the provider returned for our
// create request.
// authTimeout is recorded in a requires_action answer's details.
func chargeOutcome(pi *stripe.PaymentIntent, key string, authTimeout time.Duration) (ChargeResult, error) {
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		return ChargeResult{PaymentIntentID: pi.ID}, nil
	case stripe.PaymentIntentStatusProcessing:
		// Not final yet: the money may still move. The saga waits for the
		// PaymentIntent's webhook (the details name it); reconciliation
		// looks again when none comes.
		return ChargeResult{}, temporal.NewApplicationErrorWithOptions(
			fmt.Sprintf("payment intent %s is still processing (key %s)", pi.ID, key), ErrTypePaymentOutcomeUnknown,
			temporal.ApplicationErrorOptions{Details: []any{PaymentProcessingDetails{PaymentIntentID: pi.ID, Status: string(pi.Status)}}})
	case stripe.PaymentIntentStatusRequiresAction:
		// 3-D Secure: nothing is charged until the customer authenticates,
		// which the PaymentIntent's webhook reports. The saga waits for it
		// up to authTimeout, then cancels the PaymentIntent (CancelPayment).
		return ChargeResult{}, temporal.NewApplicationErrorWithOptions(
			fmt.Sprintf("payment intent %s requires the customer's authentication (key %s)", pi.ID, key), ErrTypePaymentOutcomeUnknown,
			temporal.ApplicationErrorOptions{Details: []any{PaymentProcessingDetails{
				PaymentIntentID: pi.ID, Status: string(pi.Status), AuthenticationTimeout: authTimeout}}})
	default:
		// requires_payment_method (declined), canceled: nothing was charged.
		d := PaymentDeclinedDetails{PaymentIntentID: pi.ID, DeclineCode: string(pi.Status)}
		if pi.LastPaymentError != nil {
			d.Message = pi.LastPaymentError.Msg
		}
		return ChargeResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("payment intent %s ended %s", pi.ID, pi.Status), ErrTypePaymentDeclined, nil, d)
	}
}

// errNoStripe is returned when the worker was built without a payment client.
var errNoStripe = errors.New("activities: no payment provider client configured (set STRIPE_API_BASE or STRIPE_API_KEY)")
