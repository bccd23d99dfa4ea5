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

// webhookMode says how a scenario's payment is settled at the provider.
type webhookMode int

const (
	// The zero value: the scenario settles its payment by the charge's
	// own answer, without waiting for a webhook.
	_ webhookMode = iota
	// webhookSettle: the payment stays processing until the demo settles
	// it at the simulator, whose signed payment_intent.succeeded webhook
	// confirms the order.
	webhookSettle
	// webhookTwiceReordered: the same, with the simulator's deliveries held
	// and released newest first (succeeded before processing), then the
	// succeeded event delivered once more.
	webhookTwiceReordered
)

// The SKUs the scripted orders use; the demo stocks them in the inventory
// at every run (soldOutSKU at zero).
const (
	soldOutSKU = "POSTER-SOLDOUT"
	stockLevel = 100
)

// demoStock is what the demo sets available of each SKU before placing
// the orders.
var demoStock = map[string]int{"BOOK-DDIA": stockLevel, "STICKER-PG": stockLevel, soldOutSKU: 0}

// item is one line of an order.
type item struct {
	sku       string
	quantity  int
	unitPrice int
}

// defaultItems are the lines of every order but the out-of-stock one.
var defaultItems = []item{{"BOOK-DDIA", 1, 4599}, {"STICKER-PG", 3, 250}}

// scenario is one scripted order and what must become of it.
type scenario struct {
	name          string
	paymentMethod string
	// items are the order's lines; nil: defaultItems.
	items []item
	// fault is injected into the simulator just before the order is placed.
	fault   string
	cancel  cancelMode
	webhook webhookMode
	expect  expectation
}

// orderItems are the scenario's lines.
func (sc scenario) orderItems() []item {
	if sc.items == nil {
		return defaultItems
	}
	return sc.items
}

// expectation is a scenario's required final state. Charges and refunds count
// succeeded effects in the provider's ledger for the order.
type expectation struct {
	status string
	// charges and refunds are exact counts; -1 means "equal to each other, at
	// most one" (a race decides whether the charge happened, never the net).
	charges, refunds int
	emails           []string
	// stock are the inventory reservation states allowed ("reserved",
	// "released", "none": the inventory holds no reservation for the order).
	stock []string
	// noCharge: no payment intent may exist at all (the provider was never
	// called).
	noCharge bool
	// webhooks and recorded are the exact counts of the provider's webhook
	// deliveries for the order and of the PaymentWebhookReceived events
	// the order API recorded from them; -1: not checked.
	webhooks, recorded int
	// pendingUntilWebhook: the order was still pending when the demo
	// settled the payment, so the webhook is what confirmed it.
	pendingUntilWebhook bool
}

// observed is what the demo found for one order.
type observed struct {
	status           string
	charges, refunds int
	paymentIntents   int // every intent for the order, succeeded or not
	emails           []string
	duplicateEffects int    // effects stored twice under one idempotency key
	stock            string // the inventory's reservation of the order: reserved, released or none
	webhooks         int    // webhook deliveries about the order's payment, answered 2xx
	recorded         int    // PaymentWebhookReceived events recorded for the order
	beforeWebhook    string // the order's status just before the demo settled its payment
}

// scenarios is the scripted set: happy path, declined card, provider timeout
// with an unknown outcome, a cancel racing the charge, a late cancel, an
// order out of stock, an asynchronous payment settled by its webhook, and
// one whose webhooks come twice and out of order.
func scenarios() []scenario {
	return []scenario{
		{name: "provider timeout (outcome unknown)", paymentMethod: "pm_card_visa", fault: "timeout_after_commit",
			expect: expectation{status: "confirmed", charges: 1, emails: []string{"confirmation"}, stock: []string{"reserved"}, webhooks: -1, recorded: -1}},
		{name: "happy path", paymentMethod: "pm_card_visa",
			expect: expectation{status: "confirmed", charges: 1, emails: []string{"confirmation"}, stock: []string{"reserved"}, webhooks: -1, recorded: -1}},
		{name: "declined card", paymentMethod: "pm_card_chargeDeclined",
			expect: expectation{status: "payment_failed", charges: 0, emails: []string{"payment_failed"}, stock: []string{"released"}, webhooks: -1, recorded: -1}},
		{name: "cancel racing the charge", paymentMethod: "pm_card_visa", cancel: cancelRacing,
			// Whether the reserve ran before the cancel, the cancel releases:
			// the stock, or a tombstone that rejects a late reserve.
			expect: expectation{status: "cancelled", charges: -1, refunds: -1, emails: []string{"cancellation"}, stock: []string{"released", "none"}, webhooks: -1, recorded: -1}},
		{name: "cancel after confirmation", paymentMethod: "pm_card_visa", cancel: cancelLate,
			expect: expectation{status: "cancelled", charges: 1, refunds: 1, emails: []string{"cancellation", "confirmation"}, stock: []string{"released"}, webhooks: -1, recorded: -1}},
		{name: "out of stock", paymentMethod: "pm_card_visa", items: []item{{"BOOK-DDIA", 1, 4599}, {soldOutSKU, 1, 1500}},
			expect: expectation{status: "payment_failed", charges: 0, emails: []string{"stock_unavailable"}, stock: []string{"none"}, noCharge: true, webhooks: 0, recorded: 0}},
		{name: "async payment, webhook", paymentMethod: "pm_sim_processing", webhook: webhookSettle,
			expect: expectation{status: "confirmed", charges: 1, emails: []string{"confirmation"}, stock: []string{"reserved"},
				webhooks: 2, recorded: 2, pendingUntilWebhook: true}},
		{name: "webhook twice, out of order", paymentMethod: "pm_sim_processing", webhook: webhookTwiceReordered,
			expect: expectation{status: "confirmed", charges: 1, emails: []string{"confirmation"}, stock: []string{"reserved"},
				webhooks: 3, recorded: 2, pendingUntilWebhook: true}},
	}
}

// String renders an expectation for the table.
func (e expectation) String() string {
	money := fmt.Sprintf("charges=%d refunds=%d", e.charges, e.refunds)
	if e.charges < 0 {
		money = "net charge 0"
	}
	if e.noCharge {
		money = "no charge"
	}
	out := e.status + ", " + money
	if len(e.stock) == 1 {
		out += ", stock " + e.stock[0]
	}
	if e.pendingUntilWebhook {
		out += ", after webhook"
	}
	return out
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
	if e.noCharge && o.paymentIntents > 0 {
		why = append(why, fmt.Sprintf("%d payment intents created, want none (the provider must not be called)", o.paymentIntents))
	}
	if len(e.stock) > 0 && !slices.Contains(e.stock, o.stock) {
		why = append(why, fmt.Sprintf("stock %s, want %s", o.stock, strings.Join(e.stock, " or ")))
	}
	if e.webhooks >= 0 && o.webhooks != e.webhooks {
		why = append(why, fmt.Sprintf("%d webhooks delivered, want %d", o.webhooks, e.webhooks))
	}
	if e.recorded >= 0 && o.recorded != e.recorded {
		why = append(why, fmt.Sprintf("%d webhook events recorded, want %d", o.recorded, e.recorded))
	}
	if e.pendingUntilWebhook && o.beforeWebhook != "pending" {
		why = append(why, fmt.Sprintf("status %q before the webhook, want pending", o.beforeWebhook))
	}
	if o.duplicateEffects > 0 {
		why = append(why, fmt.Sprintf("%d effects stored twice under one key", o.duplicateEffects))
	}
	return strings.Join(why, "; ")
}
