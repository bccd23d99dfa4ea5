package testsuite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/providersim"
)

// orderFacts is one order with what the database holds about its events.
type orderFacts struct {
	OrderID         string `db:"order_id"`
	Status          string `db:"status"`
	PaymentMethod   string `db:"payment_method"`
	Amount          int64  `db:"amount"`
	CancelRequested bool   `db:"cancel_requested"`
	AppliedSequence int64  `db:"applied_sequence"`
	CreatedEvents   int64  `db:"created_events"`
	CancelledEvents int64  `db:"cancelled_events"`
	Events          int64  `db:"events"`
	MaxSequence     int64  `db:"max_sequence"`
	Unpublished     int64  `db:"unpublished"`
}

// webhookFacts is what the order database holds of the Stripe webhooks:
// the inbox rows of consumer stripe.webhook and the payment events.
type webhookFacts struct {
	InboxRows   int64 `db:"inbox_rows"`
	Events      int64 `db:"events"`
	Unpublished int64 `db:"unpublished"`
	Quarantined int64 `db:"quarantined"`
	Orphans     int64 `db:"orphans"`
}

// Report summarises what a check saw.
type Report struct {
	Orders, Events                   int
	Confirmed, PaymentFailed, Cancel int
	Charges, Refunds, Emails         int
	// Skipped counts the events an operator skipped (not in Events).
	Skipped int
	// Webhooks counts the Stripe events recorded (inbox rows),
	// WebhookEvents their events (not in Events).
	Webhooks, WebhookEvents int
}

func (r Report) String() string {
	return fmt.Sprintf("orders=%d (confirmed=%d payment_failed=%d cancelled=%d) events=%d skipped=%d webhooks=%d (events %d) charges=%d refunds=%d emails=%d",
		r.Orders, r.Confirmed, r.PaymentFailed, r.Cancel, r.Events, r.Skipped, r.Webhooks, r.WebhookEvents, r.Charges, r.Refunds, r.Emails)
}

// skippedEvent is one event an operator skipped.
type skippedEvent struct {
	EventID       string `db:"event_id"`
	AggregateType string `db:"aggregate_type"`
	EventType     string `db:"event_type"`
	SkippedBy     string `db:"skipped_by"`
	Reason        string `db:"reason"`
	Published     bool   `db:"published"`
}

// WaitDrained waits until every event is published and every order is in a
// final state, or the timeout passes.
func WaitDrained(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		p, err := qProgress.One(ctx, pool, namedsql.NoArgs{})
		if err == nil && p.Unpublished == 0 && p.Unfinished == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not drained after %s: %d events unpublished, %d orders unfinished (err %v)", timeout, p.Unpublished, p.Unfinished, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// CheckInvariants asserts the four invariants of docs/reference.md and the provider
// ledger over everything in the database. It returns every violation found,
// not just the first.
func CheckInvariants(ctx context.Context, pool *pgxpool.Pool, tc client.Client, ledger providersim.Ledger) (Report, error) {
	var rep Report
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	facts, err := qOrderFacts.All(ctx, pool, namedsql.NoArgs{})
	if err != nil {
		return rep, err
	}
	rep.Orders = len(facts)

	// Invariant 1: every committed change has exactly one event, in a gap-free
	// per-order sequence.
	for _, f := range facts {
		if f.CreatedEvents != 1 {
			fail("invariant 1: order %s has %d OrderCreated events, want 1", f.OrderID, f.CreatedEvents)
		}
		wantCancelled := int64(0)
		if f.CancelRequested {
			wantCancelled = 1
		}
		if f.CancelledEvents != wantCancelled {
			fail("invariant 1: order %s has %d OrderCancelled events, want %d", f.OrderID, f.CancelledEvents, wantCancelled)
		}
		if f.Events != f.MaxSequence {
			fail("invariant 1: order %s has %d events but sequence reaches %d (gap or duplicate)", f.OrderID, f.Events, f.MaxSequence)
		}
	}
	// Invariant 2: no event without its committed change.
	orphans, err := qOrphanEvents.Value(ctx, pool, namedsql.NoArgs{})
	if err != nil {
		return rep, err
	}
	if orphans != 0 {
		fail("invariant 2: %d events belong to no committed order", orphans)
	}
	// Invariant 3: every event was published and its workflow exists.
	ids, err := qEventIDs.All(ctx, pool, namedsql.NoArgs{})
	if err != nil {
		return rep, err
	}
	rep.Events = len(ids)
	for _, f := range facts {
		if f.Unpublished != 0 {
			fail("invariant 3: order %s has %d unpublished events", f.OrderID, f.Unpublished)
		}
	}
	for _, id := range ids {
		if _, err := tc.DescribeWorkflow(ctx, id, ""); err != nil {
			fail("invariant 3: no workflow with ID = event_id %s: %v", id, err)
		}
	}
	// An event an operator skipped is the one exception to invariant 3: it
	// is never published, and its row keeps who skipped it and why.
	skipped, err := qSkippedEvents.All(ctx, pool, namedsql.NoArgs{})
	if err != nil {
		return rep, err
	}
	rep.Skipped = len(skipped)
	for _, e := range skipped {
		if e.Published || e.SkippedBy == "" || e.Reason == "" {
			fail("invariant 3: skipped event %s (%s %s): published %v, skipped by %q, reason %q; want unpublished, with who and why",
				e.EventID, e.AggregateType, e.EventType, e.Published, e.SkippedBy, e.Reason)
		}
	}
	// The webhooks' events are signals to the order's saga, not workflows
	// of their own: each has its Stripe event's inbox row (invariant 1),
	// an existing order (invariant 2), and was published (invariant 3).
	wh, err := qWebhookFacts.One(ctx, pool, namedsql.NoArgs{})
	if err != nil {
		return rep, err
	}
	rep.Webhooks, rep.WebhookEvents = int(wh.InboxRows), int(wh.Events)
	if wh.Events > wh.InboxRows {
		fail("invariant 1: %d webhook events but %d recorded Stripe events: a webhook was recorded twice", wh.Events, wh.InboxRows)
	}
	if wh.Orphans != 0 {
		fail("invariant 2: %d webhook events belong to no committed order", wh.Orphans)
	}
	if wh.Unpublished != 0 || wh.Quarantined != 0 {
		fail("invariant 3: %d webhook events unpublished, %d quarantined", wh.Unpublished, wh.Quarantined)
	}
	// Invariant 4: effects once, checked against the provider's ledger.
	errs = append(errs, checkLedger(facts, ledger, &rep)...)
	return rep, errors.Join(errs...)
}

// checkLedger compares every order's final state with its effects.
func checkLedger(facts []orderFacts, l providersim.Ledger, rep *Report) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	type effects struct {
		intents, charges, refunds int
		charged, refunded         int64
		emails                    map[string]int
	}
	byOrder := map[string]*effects{}
	get := func(id string) *effects {
		if byOrder[id] == nil {
			byOrder[id] = &effects{emails: map[string]int{}}
		}
		return byOrder[id]
	}
	keys := map[string]int{}
	piOrder := map[string]string{}
	for _, pi := range l.PaymentIntents {
		keys["pi:"+pi.IdempotencyKey]++
		piOrder[pi.ID] = pi.Metadata["order_id"]
		get(pi.Metadata["order_id"]).intents++
		if pi.Status == "succeeded" {
			e := get(pi.Metadata["order_id"])
			e.charges++
			e.charged += pi.Amount
		}
	}
	for _, rf := range l.Refunds {
		keys["re:"+rf.IdempotencyKey]++
		if rf.Status == "succeeded" {
			e := get(piOrder[rf.PaymentIntent])
			e.refunds++
			e.refunded += rf.Amount
		}
	}
	for _, em := range l.Emails {
		keys["em:"+em.IdempotencyKey]++
		get(em.Tags["order_id"]).emails[em.Tags["kind"]]++
	}
	for k, n := range keys {
		if n > 1 && !strings.HasSuffix(k, ":") {
			fail("invariant 4: idempotency key %s holds %d effects", k, n)
		}
	}
	for _, f := range facts {
		e := get(f.OrderID)
		rep.Charges += e.charges
		if e.intents > 1 {
			// A lost answer must be reconciled, never charged again.
			fail("invariant 4: order %s has %d payment intents at the provider, want at most 1", f.OrderID, e.intents)
		}
		rep.Refunds += e.refunds
		for kind, n := range e.emails {
			rep.Emails += n
			if n > 1 {
				fail("invariant 4: order %s got %d %s emails", f.OrderID, n, kind)
			}
		}
		switch {
		case f.CancelRequested:
			rep.Cancel++
			if f.Status != "cancelled" {
				fail("order %s: cancel requested but status %s", f.OrderID, f.Status)
			}
			if e.charges > 1 || e.refunds > 1 || e.charged != e.refunded {
				fail("invariant 4: cancelled order %s: charged %d in %d charges, refunded %d in %d refunds; want net zero, at most one each",
					f.OrderID, e.charged, e.charges, e.refunded, e.refunds)
			}
			if e.emails["cancellation"] != 1 {
				fail("invariant 4: cancelled order %s got %d cancellation emails, want 1", f.OrderID, e.emails["cancellation"])
			}
		case f.PaymentMethod == "pm_card_chargeDeclined":
			rep.PaymentFailed++
			if f.Status != "payment_failed" || e.charges != 0 || e.emails["payment_failed"] != 1 {
				fail("invariant 4: declined order %s: status %s, %d charges, %d payment_failed emails; want payment_failed, 0, 1",
					f.OrderID, f.Status, e.charges, e.emails["payment_failed"])
			}
		default:
			rep.Confirmed++
			if f.Status != "confirmed" || e.charges != 1 || e.charged != f.Amount || e.refunds != 0 || e.emails["confirmation"] != 1 {
				fail("invariant 4: order %s: status %s, %d charges of %d (amount %d), %d refunds, %d confirmation emails; want confirmed, 1 charge of the amount, 0, 1",
					f.OrderID, f.Status, e.charges, e.charged, f.Amount, e.refunds, e.emails["confirmation"])
			}
		}
	}
	return errs
}
