package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// cancelMode says when a scenario cancels its order.
type cancelMode int

const (
	noCancel     cancelMode = iota
	cancelRacing            // right after the create, while the charge runs
	cancelLate              // after the order is confirmed
)

// scenario is one scripted order and what must become of it.
type scenario struct {
	name          string
	paymentMethod string
	// fault is injected into the simulator just before the order is placed.
	fault  string
	cancel cancelMode
	expect expectation
}

// expectation is a scenario's required final state. Charges and refunds count
// succeeded effects in the provider's ledger for the order.
type expectation struct {
	status string
	// charges and refunds are exact counts; -1 means "equal to each other, at
	// most one" (a race decides whether the charge happened, never the net).
	charges, refunds int
	emails           []string
}

// observed is what the demo found for one order.
type observed struct {
	status           string
	charges, refunds int
	paymentIntents   int // every intent for the order, succeeded or not
	emails           []string
	duplicateEffects int // effects stored twice under one idempotency key
}

// scenarios is the scripted set: happy path, declined card, provider timeout
// with an unknown outcome, a cancel racing the charge, and a late cancel.
func scenarios() []scenario {
	return []scenario{
		{name: "provider timeout (outcome unknown)", paymentMethod: "pm_card_visa", fault: "timeout_after_commit",
			expect: expectation{status: "confirmed", charges: 1, emails: []string{"confirmation"}}},
		{name: "happy path", paymentMethod: "pm_card_visa",
			expect: expectation{status: "confirmed", charges: 1, emails: []string{"confirmation"}}},
		{name: "declined card", paymentMethod: "pm_card_chargeDeclined",
			expect: expectation{status: "payment_failed", charges: 0, emails: []string{"payment_failed"}}},
		{name: "cancel racing the charge", paymentMethod: "pm_card_visa", cancel: cancelRacing,
			expect: expectation{status: "cancelled", charges: -1, refunds: -1, emails: []string{"cancellation"}}},
		{name: "cancel after confirmation", paymentMethod: "pm_card_visa", cancel: cancelLate,
			expect: expectation{status: "cancelled", charges: 1, refunds: 1, emails: []string{"cancellation", "confirmation"}}},
	}
}

// String renders an expectation for the table.
func (e expectation) String() string {
	money := fmt.Sprintf("charges=%d refunds=%d", e.charges, e.refunds)
	if e.charges < 0 {
		money = "net charge 0"
	}
	return e.status + ", " + money
}

// check compares what was observed with the expectation and says why it does
// not match, or "" when it does.
func (e expectation) check(o observed) string {
	var why []string
	if o.status != e.status {
		why = append(why, fmt.Sprintf("status %s, want %s", o.status, e.status))
	}
	if e.charges < 0 {
		if o.charges != o.refunds || o.charges > 1 {
			why = append(why, fmt.Sprintf("net charge not zero (charges=%d refunds=%d)", o.charges, o.refunds))
		}
	} else {
		if o.charges != e.charges {
			why = append(why, fmt.Sprintf("charges=%d, want %d", o.charges, e.charges))
		}
		if o.refunds != e.refunds {
			why = append(why, fmt.Sprintf("refunds=%d, want %d", o.refunds, e.refunds))
		}
	}
	// A racing cancel may land after the confirmation mail: tolerate that
	// one extra kind, never a duplicate.
	got := slices.Clone(o.emails)
	sort.Strings(got)
	want := slices.Clone(e.emails)
	if e.charges < 0 && slices.Contains(got, "confirmation") {
		want = append(want, "confirmation")
	}
	sort.Strings(want)
	if !slices.Equal(got, want) {
		why = append(why, fmt.Sprintf("emails %v, want %v", got, want))
	}
	if o.paymentIntents > 1 {
		why = append(why, fmt.Sprintf("%d payment intents created, want at most 1", o.paymentIntents))
	}
	if o.duplicateEffects > 0 {
		why = append(why, fmt.Sprintf("%d effects stored twice under one key", o.duplicateEffects))
	}
	return strings.Join(why, "; ")
}
