package activities

import (
	"context"
	"fmt"
	"math"
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
	// ListCursor continues a list an earlier call left incomplete: the id
	// of the last PaymentIntent it read ([ReconcileResult.ListCursor]),
	// sent as Stripe's starting_after. Empty starts at the newest.
	ListCursor string `json:"list_cursor,omitempty"`
	// ListPages is the most list pages (of 100 PaymentIntents) this call
	// reads; the workflows send [DefaultReconcileListPages] and loop on
	// [ReconcileResult.Incomplete]. Zero is an input recorded before the
	// list was bounded: its workflow code cannot continue a walk and would
	// read "incomplete" as "not charged", so it gets the whole list in one
	// call, as it always did (a timeout there is retried and, in the end,
	// visible; a truncated answer would not be).
	ListPages int `json:"list_pages,omitempty"`
	// ListUntil is the upper bound of the list window (created <= it, in
	// the provider's clock: leave the same margin for skew as the lower
	// bound's ten minutes). Zero means none. A caller walking with
	// ListCursor does not need it for stable pages (the cursor keeps its
	// place however many PaymentIntents are created meanwhile); it only
	// spares reading the newest ones.
	ListUntil time.Time `json:"list_until,omitempty"`
}

// DefaultReconcileListPages is how many list pages one ReconcilePayment call
// of the workflows reads: 1,000 PaymentIntents, a few seconds of requests,
// well inside the activity's timeout however busy the account.
const DefaultReconcileListPages = 10

// reconcileListPageSize is the largest page Stripe serves (limit=100): the
// fewest round trips for a window.
const reconcileListPageSize = 100

// listDeadlineReserve is the time kept in hand, beyond one more page, when
// ctx has a deadline: enough to return a result to Temporal rather than
// have the attempt time out with the pages it read lost.
const listDeadlineReserve = 2 * time.Second

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
	// AwaitingAuthentication: the charge is waiting for the customer's 3-D
	// Secure (requires_action): nothing is charged yet, but it may be. The
	// saga waits for it like for its own charge's answer, then cancels.
	AwaitingAuthentication ReconcileOutcome = "requires_action"
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
	// Incomplete is set when the list stopped (page budget or deadline)
	// before its end with nothing of the event found: Outcome is NotCharged
	// only as far as the list was read. Call again with ListCursor until
	// Incomplete is false.
	Incomplete bool `json:"incomplete,omitempty"`
	// ListCursor is where an Incomplete list stopped: pass it back as
	// [ReconcileInput.ListCursor].
	ListCursor string `json:"list_cursor,omitempty"`
	// AuthenticationTimeout is, with AwaitingAuthentication, how long the
	// saga waits for the customer ([Config.AuthenticationTimeout]).
	AuthenticationTimeout time.Duration `json:"authentication_timeout,omitempty"`
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
// The list is bounded: at most [ReconcileInput.ListPages] pages per call,
// fewer when ctx's deadline is near. When it stops early with nothing found
// the result is NotCharged with Incomplete set and a cursor to continue
// from; the caller calls again with it.
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
		if pi.Status == stripe.PaymentIntentStatusRequiresAction {
			// The key replays the first answer; the customer may have
			// authenticated (or failed to) since.
			res, err := a.currentCharge(ctx, pi.ID)
			return res, err == nil, err
		}
		r, cerr := chargeOutcome(pi, key, a.authenticationTimeout())
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

// currentCharge is the truth about a charge that answered requires_action,
// from the PaymentIntent as it is now.
func (a *Activities) currentCharge(ctx context.Context, id string) (ReconcileResult, error) {
	p := &stripe.PaymentIntentParams{}
	p.Context = ctx
	pi, err := a.Stripe.PaymentIntents.Get(id, p)
	if err != nil {
		return ReconcileResult{}, temporal.NewApplicationErrorWithCause(
			fmt.Sprintf("payment outcome unknown: retrieving payment intent %s failed: %v", id, err), ErrTypePaymentOutcomeUnknown, err)
	}
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		return ReconcileResult{Outcome: Charged, PaymentIntentID: pi.ID, Amount: pi.Amount, Currency: string(pi.Currency), Via: "replay"}, nil
	case stripe.PaymentIntentStatusRequiresAction:
		return ReconcileResult{Outcome: AwaitingAuthentication, PaymentIntentID: pi.ID, Via: "replay",
			AuthenticationTimeout: a.authenticationTimeout()}, nil
	case stripe.PaymentIntentStatusProcessing:
		return ReconcileResult{}, temporal.NewApplicationError(
			fmt.Sprintf("payment intent %s is still processing", pi.ID), ErrTypePaymentOutcomeUnknown)
	}
	// requires_payment_method (authentication failed) or canceled.
	return ReconcileResult{Outcome: Declined, PaymentIntentID: pi.ID, Via: "replay"}, nil
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

	walk := listWalk{ended: true}
	if len(found) == 0 && !in.OccurredAt.IsZero() {
		via = "list"
		var err error
		if walk, err = a.listWindow(ctx, in); err != nil {
			return ReconcileResult{}, temporal.NewApplicationErrorWithCause(
				"payment outcome unknown: listing PaymentIntents failed: "+err.Error(), ErrTypePaymentOutcomeUnknown, err)
		}
		found = walk.found
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
		// Even when the list stopped early: the event's PaymentIntents
		// share one key, so a declined one is its charge's outcome, and
		// anything older of the event would mean it was charged twice.
		// Reporting NotCharged instead would make the saga charge again.
		return ReconcileResult{Outcome: Declined, PaymentIntentID: declined.ID, Via: via}, nil
	}
	if !walk.ended {
		return ReconcileResult{Outcome: NotCharged, Via: via, Incomplete: true, ListCursor: walk.cursor}, nil
	}
	return ReconcileResult{Outcome: NotCharged, Via: via}, nil
}

// listWalk is what one call's share of the list found, and where it stopped.
type listWalk struct {
	// found are the event's PaymentIntents among those read.
	found []*stripe.PaymentIntent
	// cursor is the id of the last PaymentIntent read.
	cursor string
	// ended is set when the list has no more pages after cursor.
	ended bool
}

// listWindow reads the list of PaymentIntents created in the event's window,
// newest first, from in.ListCursor on: at most in.ListPages pages, one at a
// time so it can stop between them, and only the first when ctx's deadline
// is close. It stops early after a page holding a succeeded or processing
// PaymentIntent of the event, which decides the outcome.
func (a *Activities) listWindow(ctx context.Context, in ReconcileInput) (listWalk, error) {
	budget, legacy := in.ListPages, in.ListPages <= 0
	if legacy {
		budget = math.MaxInt32 // see ReconcileInput.ListPages
	}
	window := &stripe.RangeQueryParams{
		// Ten minutes before the event covers the provider's clock being
		// behind ours; the charge cannot predate the event otherwise.
		GreaterThanOrEqual: in.OccurredAt.Add(-10 * time.Minute).Unix(),
	}
	if !in.ListUntil.IsZero() {
		window.LesserThanOrEqual = in.ListUntil.Unix()
	}
	walk := listWalk{cursor: in.ListCursor}
	var slowest time.Duration
	for page := range budget {
		// The first page is always read, so that every call moves the
		// cursor and a caller looping on Incomplete finishes.
		if page > 0 && !legacy && !roomForPage(ctx, slowest) {
			return walk, nil
		}
		lp := &stripe.PaymentIntentListParams{CreatedRange: window}
		lp.Context = ctx
		lp.Limit = stripe.Int64(reconcileListPageSize)
		// One page per request: stripe-go's iterator would otherwise follow
		// has_more by itself, past the budget and the deadline.
		lp.Single = true
		if walk.cursor != "" {
			lp.StartingAfter = stripe.String(walk.cursor)
		}
		started := time.Now()
		it := a.Stripe.PaymentIntents.List(lp)
		read := 0
		for it.Next() {
			pi := it.PaymentIntent()
			read++
			walk.cursor = pi.ID
			if pi.Metadata[MetadataEventID] == in.Charge.EventID {
				walk.found = append(walk.found, pi)
			}
		}
		if err := it.Err(); err != nil {
			return walk, err
		}
		slowest = max(slowest, time.Since(started))
		// An empty page ends the walk whatever has_more says: continuing
		// from an unchanged cursor would loop.
		if read == 0 || !it.PaymentIntentList().HasMore {
			walk.ended = true
			return walk, nil
		}
		if decisive(walk.found) {
			return walk, nil
		}
	}
	return walk, nil
}

// decisive reports whether found holds a PaymentIntent that decides the
// outcome whatever older ones say: a succeeded or a processing one.
func decisive(found []*stripe.PaymentIntent) bool {
	for _, pi := range found {
		if pi.Status == stripe.PaymentIntentStatusSucceeded || pi.Status == stripe.PaymentIntentStatusProcessing {
			return true
		}
	}
	return false
}

// roomForPage reports whether ctx's deadline leaves time for another page:
// as long as the slowest page so far, plus [listDeadlineReserve]. The
// deadline is the activity's (real time, not [Activities.Now]).
func roomForPage(ctx context.Context, slowest time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) >= slowest+listDeadlineReserve
}
