package activities

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
	"go.temporal.io/sdk/temporal"
)

// KeyLifetime is how long the payment provider remembers an idempotency key
// (Stripe: 24 hours). Within it a request with the same key replays the first
// answer; after it the same request is a new charge.
const KeyLifetime = 24 * time.Hour

// ReplayWindow is the part of [KeyLifetime] in which reconciliation trusts a
// replay. The hour of margin covers clock skew between this worker and the
// provider and a request still in flight when the key expires: replaying a
// key the provider has just forgotten would charge the customer a second
// time.
const ReplayWindow = KeyLifetime - time.Hour

// ReconcileInput asks what became of a charge whose answer was lost.
type ReconcileInput struct {
	// Charge is the exact charge that was attempted (the replay resends it).
	Charge ChargeInput `json:"charge"`
	// FirstAttemptAt is when the charge's key was first sent. Zero means
	// unknown: only a search is safe then.
	FirstAttemptAt time.Time `json:"first_attempt_at"`
	// OccurredAt is the event's time, the lower bound of the list window.
	// Zero skips the list.
	OccurredAt time.Time `json:"occurred_at"`
}

// ReconcileOutcome is what reconciliation learned.
type ReconcileOutcome string

// Reconciliation outcomes.
const (
	// Charged: a succeeded PaymentIntent exists for the event.
	Charged ReconcileOutcome = "charged"
	// NotCharged: the provider holds no charge for the event.
	NotCharged ReconcileOutcome = "not_charged"
	// Declined: the charge was attempted and declined (or rejected); nothing
	// was charged and charging again would be declined again.
	Declined ReconcileOutcome = "declined"
)

// ReconcileResult is the truth about an event's charge.
type ReconcileResult struct {
	Outcome         ReconcileOutcome `json:"outcome"`
	PaymentIntentID string           `json:"payment_intent_id,omitempty"`
	// Amount and Currency are the found PaymentIntent's, so a caller that
	// did not know the charge (the cancel workflow's fallback) can refund it.
	Amount   int64  `json:"amount,omitempty"`
	Currency string `json:"currency,omitempty"`
	// Via says how the answer was found: "replay", "search" or "list".
	Via string `json:"via"`
}

// ReconcilePayment finds out whether the charge of in.Charge.EventID happened,
// without ever making a second one.
//
// Within [ReplayWindow] of the key's first use it resends the same request
// with the same key: the provider replays the first outcome (or, if the first
// request never arrived, performs it now — once, under that key). After the
// window, when the key holds another request (idempotency_error), or when the
// provider replays a stored 5xx, a replay cannot tell, so it searches the
// provider by metadata['event_id'] and lists PaymentIntents created since the
// event (the list is strongly consistent where search may lag).
//
// A still-unknown outcome is returned as a retryable PaymentOutcomeUnknown
// error: Temporal retries reconciliation, the workflow never guesses.
func (a *Activities) ReconcilePayment(ctx context.Context, in ReconcileInput) (ReconcileResult, error) {
	if a.Stripe == nil {
		return ReconcileResult{}, errNoStripe
	}
	if !in.FirstAttemptAt.IsZero() && a.now().Before(in.FirstAttemptAt.Add(ReplayWindow)) {
		res, done, err := a.replayCharge(ctx, in.Charge)
		if done || err != nil {
			return res, err
		}
	}
	return a.searchCharge(ctx, in)
}

// replayCharge resends the charge under its key. done is false when the
// replay cannot tell and a search must decide.
func (a *Activities) replayCharge(ctx context.Context, in ChargeInput) (res ReconcileResult, done bool, err error) {
	key := ChargeKey(in.EventID)
	pi, err := a.Stripe.PaymentIntents.New(chargeParams(ctx, in, key))
	if err == nil {
		r, cerr := chargeOutcome(pi, key)
		switch {
		case cerr == nil:
			return ReconcileResult{Outcome: Charged, PaymentIntentID: r.PaymentIntentID, Amount: pi.Amount, Currency: string(pi.Currency), Via: "replay"}, true, nil
		case IsPaymentDeclined(cerr):
			return ReconcileResult{Outcome: Declined, PaymentIntentID: pi.ID, Via: "replay"}, true, nil
		default:
			return ReconcileResult{}, false, cerr
		}
	}
	cls := classifyCharge(err, key)
	switch {
	case IsPaymentDeclined(cls), hasType(cls, ErrTypePaymentRejected):
		return ReconcileResult{Outcome: Declined, Via: "replay"}, true, nil
	case hasType(cls, ErrTypePaymentIdempotencyConflict):
		return ReconcileResult{}, false, nil
	}
	if se, ok := stripeErr(err); ok && se.HTTPStatusCode >= 500 && replayed(se) {
		// Stripe stores a 5xx under the key like any answer; replaying it
		// again would say nothing new.
		return ReconcileResult{}, false, nil
	}
	return ReconcileResult{}, false, cls
}

// replayed reports whether the provider answered from its idempotency store.
func replayed(se *stripe.Error) bool {
	return se.LastResponse != nil && se.LastResponse.Header.Get("Idempotent-Replayed") == "true"
}

// searchCharge looks the event's PaymentIntents up by metadata and by time.
func (a *Activities) searchCharge(ctx context.Context, in ReconcileInput) (ReconcileResult, error) {
	eventID := in.Charge.EventID
	var found []*stripe.PaymentIntent
	via := "search"

	sp := &stripe.PaymentIntentSearchParams{}
	sp.Context = ctx
	sp.Query = fmt.Sprintf("metadata['%s']:'%s'", MetadataEventID, strings.ReplaceAll(eventID, "'", ""))
	it := a.Stripe.PaymentIntents.Search(sp)
	for it.Next() {
		found = append(found, it.PaymentIntent())
	}
	if err := it.Err(); err != nil {
		return ReconcileResult{}, temporal.NewApplicationErrorWithCause(
			"payment outcome unknown: searching PaymentIntents by event_id failed: "+err.Error(), ErrTypePaymentOutcomeUnknown, err)
	}

	if len(found) == 0 && !in.OccurredAt.IsZero() {
		via = "list"
		lp := &stripe.PaymentIntentListParams{
			// Ten minutes before the event covers the provider's clock being
			// behind ours; the charge cannot predate the event otherwise.
			CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: in.OccurredAt.Add(-10 * time.Minute).Unix()},
		}
		lp.Context = ctx
		lit := a.Stripe.PaymentIntents.List(lp)
		for lit.Next() {
			if pi := lit.PaymentIntent(); pi.Metadata[MetadataEventID] == eventID {
				found = append(found, pi)
			}
		}
		if err := lit.Err(); err != nil {
			return ReconcileResult{}, temporal.NewApplicationErrorWithCause(
				"payment outcome unknown: listing PaymentIntents failed: "+err.Error(), ErrTypePaymentOutcomeUnknown, err)
		}
	}

	var declined *stripe.PaymentIntent
	for _, pi := range found {
		switch pi.Status {
		case stripe.PaymentIntentStatusSucceeded:
			return ReconcileResult{Outcome: Charged, PaymentIntentID: pi.ID, Amount: pi.Amount, Currency: string(pi.Currency), Via: via}, nil
		case stripe.PaymentIntentStatusProcessing:
			return ReconcileResult{}, temporal.NewApplicationError(
				fmt.Sprintf("payment intent %s of event %s is still processing", pi.ID, eventID), ErrTypePaymentOutcomeUnknown)
		default:
			declined = pi
		}
	}
	if declined != nil {
		return ReconcileResult{Outcome: Declined, PaymentIntentID: declined.ID, Via: via}, nil
	}
	return ReconcileResult{Outcome: NotCharged, Via: via}, nil
}
