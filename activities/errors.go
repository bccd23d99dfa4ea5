package activities

import (
	"errors"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v76"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/orders"
)

// Application error types the workflows match on (temporal.ApplicationError's
// Type). They are part of the workflow/activity protocol: renaming one breaks
// running workflows' retry policies.
const (
	// ErrTypePaymentDeclined: the provider declined the card. Final; never retried.
	ErrTypePaymentDeclined = "PaymentDeclined"
	// ErrTypePaymentOutcomeUnknown: the charge may or may not have happened
	// (timeout, 5xx, connection reset, key in flight). Retryable in itself, but
	// the saga's charge policy hands it to the workflow, which reconciles
	// before charging again.
	ErrTypePaymentOutcomeUnknown = "PaymentOutcomeUnknown"
	// ErrTypePaymentIdempotencyConflict: the provider saw the charge's key
	// with other parameters. Only a search can tell what the key holds.
	ErrTypePaymentIdempotencyConflict = "PaymentIdempotencyConflict"
	// ErrTypePaymentRejected: the provider rejected the request itself
	// (invalid_request_error): retrying the same request cannot succeed.
	ErrTypePaymentRejected = "PaymentRejected"
	// ErrTypeRefundRejected: the provider rejected the refund for good.
	ErrTypeRefundRejected = "RefundRejected"
	// ErrTypeEmailRejected: the email provider rejected the message for good
	// (invalid address, validation error).
	ErrTypeEmailRejected = "EmailRejected"
	// ErrTypeSequenceGap: an earlier event of the order has not been applied
	// yet. Retryable: the projection waits for it, it never skips.
	ErrTypeSequenceGap = "SequenceGap"
	// ErrTypeIllegalTransition: the status change is not allowed from the
	// order's current status (for instance leaving cancelled). A bug, final.
	ErrTypeIllegalTransition = "IllegalTransition"
	// ErrTypeOrderNotFound: the order row does not exist. Final.
	ErrTypeOrderNotFound = "OrderNotFound"
	// ErrTypeSequenceUnknown: a projection step without a sequence names an
	// event the order row has no sequence for (neither its created nor its
	// cancel event, or a cancel recorded before its sequence was). Final:
	// the caller must pass the sequence.
	ErrTypeSequenceUnknown = "SequenceUnknown"
	// ErrTypeSagaStillRunning: the awaited saga has not finished within one
	// activity attempt. Retryable.
	ErrTypeSagaStillRunning = "SagaStillRunning"
)

// PaymentDeclinedDetails is attached to a PaymentDeclined error.
type PaymentDeclinedDetails struct {
	PaymentIntentID string `json:"payment_intent_id,omitempty"`
	DeclineCode     string `json:"decline_code,omitempty"`
	Message         string `json:"message,omitempty"`
}

// PaymentProcessingDetails are the details of the PaymentOutcomeUnknown
// error of a charge the provider accepted but has not settled (status
// processing, or requires_action while the customer does 3-D Secure): the
// PaymentIntent whose webhook tells the outcome.
type PaymentProcessingDetails struct {
	PaymentIntentID string `json:"payment_intent_id"`
	Status          string `json:"status"`
	// AuthenticationTimeout is, for requires_action, how long the saga
	// waits for the customer ([Config.AuthenticationTimeout]).
	AuthenticationTimeout time.Duration `json:"authentication_timeout,omitempty"`
}

// PaymentProcessing returns the details of err (as returned by an activity
// future) when it is the error of a processing charge.
func PaymentProcessing(err error) (PaymentProcessingDetails, bool) {
	d, ok := paymentPending(err)
	return d, ok && d.PaymentIntentID != "" && d.Status == string(stripe.PaymentIntentStatusProcessing)
}

// paymentPending returns the details of a PaymentOutcomeUnknown error that
// has them.
func paymentPending(err error) (PaymentProcessingDetails, bool) {
	var ae *temporal.ApplicationError
	var d PaymentProcessingDetails
	if !errors.As(err, &ae) || ae.Type() != ErrTypePaymentOutcomeUnknown || !ae.HasDetails() || ae.Details(&d) != nil {
		return d, false
	}
	return d, true
}

// IsPaymentDeclined reports whether err (as returned by an activity future)
// is a PaymentDeclined error.
func IsPaymentDeclined(err error) bool { return hasType(err, ErrTypePaymentDeclined) }

// hasType reports whether err wraps a temporal ApplicationError of type t.
func hasType(err error, t string) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == t
}

// projectionError turns an error of [orders.ApplyStep] into the error type
// the workflows act on: orders' sentinel errors become the application
// errors of the same name, final but for SequenceGap. Anything else (the
// database) is returned as is, and retried.
func projectionError(err error) error {
	switch {
	case errors.Is(err, orders.ErrIllegalTransition):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeIllegalTransition, nil)
	case errors.Is(err, orders.ErrSequenceGap):
		return temporal.NewApplicationError(err.Error(), ErrTypeSequenceGap)
	case errors.Is(err, orders.ErrOrderNotFound):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeOrderNotFound, nil)
	case errors.Is(err, orders.ErrSequenceUnknown):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeSequenceUnknown, nil)
	}
	return err
}

// stripeErr returns err's *stripe.Error, if it is one.
func stripeErr(err error) (*stripe.Error, bool) {
	var se *stripe.Error
	if errors.As(err, &se) {
		return se, true
	}
	return nil, false
}

// classifyCharge turns a PaymentIntent create error into the error type the
// saga acts on. The rule: only an answer that proves nothing was charged
// (a card decline, a rejected request) is final; everything else, including
// errors we cannot parse, is an unknown outcome, because guessing "not
// charged" is how customers get charged twice.
func classifyCharge(err error, key string) error {
	se, ok := stripeErr(err)
	if !ok {
		// Timeout, connection reset, context deadline, EOF: the request may
		// have been committed by the provider.
		return temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("payment outcome unknown for key %s: %v", key, err), ErrTypePaymentOutcomeUnknown, err)
	}
	switch {
	case se.Type == stripe.ErrorTypeCard:
		d := PaymentDeclinedDetails{DeclineCode: string(se.DeclineCode), Message: se.Msg}
		if d.DeclineCode == "" {
			d.DeclineCode = string(se.Code)
		}
		if se.PaymentIntent != nil {
			d.PaymentIntentID = se.PaymentIntent.ID
		}
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("payment declined (%s): %s", d.DeclineCode, se.Msg), ErrTypePaymentDeclined, nil, d)
	// Checked before the idempotency_error type below: Stripe answers a key
	// whose first request is still executing with 409 and type
	// idempotency_error too, and that request may yet charge. Reading it as
	// "other parameters" sent reconciliation to a search that cannot see the
	// in-flight charge, which then looked like "not charged".
	case se.HTTPStatusCode == 409 || se.Code == stripe.ErrorCodeIdempotencyKeyInUse,
		se.HTTPStatusCode == 429,
		se.HTTPStatusCode >= 500,
		se.Type == stripe.ErrorTypeAPI:
		// 409: another request with this key is still in flight, so its
		// outcome is unknown too. 429 and 5xx may or may not have executed.
		return temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("payment outcome unknown for key %s: HTTP %d %s", key, se.HTTPStatusCode, se.Msg), ErrTypePaymentOutcomeUnknown, err)
	case se.Type == stripe.ErrorTypeIdempotency:
		return temporal.NewApplicationError(
			fmt.Sprintf("idempotency key %s was used with other parameters: %s", key, se.Msg), ErrTypePaymentIdempotencyConflict)
	case se.HTTPStatusCode == 401 || se.HTTPStatusCode == 403:
		// A configuration problem an operator can fix: keep retrying.
		return fmt.Errorf("payment provider refused our credentials (HTTP %d): %s; check STRIPE_API_KEY", se.HTTPStatusCode, se.Msg)
	case se.Type == stripe.ErrorTypeInvalidRequest:
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("payment request rejected (%s, param %q): %s", se.Code, se.Param, se.Msg), ErrTypePaymentRejected, err)
	default:
		return temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("payment outcome unknown for key %s: %s", key, se.Msg), ErrTypePaymentOutcomeUnknown, err)
	}
}
