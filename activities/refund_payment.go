package activities

import (
	"context"
	"fmt"

	"github.com/stripe/stripe-go/v76"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/outbox/failpoints"
)

// RefundInput is a full refund of one charge.
type RefundInput struct {
	// ChargeEventID is the OrderCreated event whose charge is refunded; the
	// key derives from it (see [RefundKey]).
	ChargeEventID   string `json:"charge_event_id"`
	OrderID         string `json:"order_id"`
	PaymentIntentID string `json:"payment_intent_id"`
	// Amount is the full charged amount: outflow refunds whole charges only,
	// which is what makes one key per charge sufficient.
	Amount int64 `json:"amount"`
}

// RefundResult is a refund the provider holds.
type RefundResult struct {
	// RefundID is empty when AlreadyRefunded is true and the provider did not
	// say which refund it was.
	RefundID string `json:"refund_id,omitempty"`
	// AlreadyRefunded: the charge was fully refunded before, under another
	// key or after this key expired. Net charge is zero either way.
	AlreadyRefunded bool `json:"already_refunded,omitempty"`
}

// RefundPayment refunds a charge in full under [RefundKey]. Transient
// failures are retryable (the same key replays); a refusal is a non-retryable
// RefundRejected error, which the workflows treat as a compensation failure.
func (a *Activities) RefundPayment(ctx context.Context, in RefundInput) (RefundResult, error) {
	if a.Stripe == nil {
		return RefundResult{}, errNoStripe
	}
	key := RefundKey(in.ChargeEventID)
	p := &stripe.RefundParams{
		PaymentIntent: stripe.String(in.PaymentIntentID),
		Amount:        stripe.Int64(in.Amount),
		Reason:        stripe.String(string(stripe.RefundReasonRequestedByCustomer)),
	}
	p.Context = ctx
	p.IdempotencyKey = stripe.String(key)
	// Only data every compensating path shares goes into the request: a
	// parameter that differed between the cancel workflow and the saga's own
	// compensation would turn the shared key into an idempotency_error.
	p.AddMetadata(MetadataEventID, in.ChargeEventID)
	p.AddMetadata(MetadataOrderID, in.OrderID)
	r, err := a.Stripe.Refunds.New(p)
	if err != nil {
		return classifyRefund(err, key)
	}
	if err := a.failpoint(ctx, failpoints.ActivityRefundAfterProvider); err != nil {
		return RefundResult{}, err // retried under the same key: a replay
	}
	if r.Status == stripe.RefundStatusFailed || r.Status == stripe.RefundStatusCanceled {
		return RefundResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("refund %s of payment intent %s ended %s", r.ID, in.PaymentIntentID, r.Status), ErrTypeRefundRejected, nil)
	}
	return RefundResult{RefundID: r.ID}, nil
}

// classifyRefund sorts a refund error: already refunded is success, a
// rejected request is final, everything else is retried under the same key.
func classifyRefund(err error, key string) (RefundResult, error) {
	se, ok := stripeErr(err)
	if !ok {
		return RefundResult{}, fmt.Errorf("refund %s: outcome unknown, retrying under the same key: %w", key, err)
	}
	switch {
	case se.Code == stripe.ErrorCodeChargeAlreadyRefunded:
		return RefundResult{AlreadyRefunded: true}, nil
	case se.HTTPStatusCode == 409 || se.HTTPStatusCode == 429 || se.HTTPStatusCode >= 500 ||
		se.HTTPStatusCode == 401 || se.HTTPStatusCode == 403:
		return RefundResult{}, fmt.Errorf("refund %s: HTTP %d %s, retrying under the same key: %w", key, se.HTTPStatusCode, se.Msg, err)
	default:
		return RefundResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("refund %s rejected (HTTP %d, %s %s): %s", key, se.HTTPStatusCode, se.Type, se.Code, se.Msg), ErrTypeRefundRejected, err)
	}
}
