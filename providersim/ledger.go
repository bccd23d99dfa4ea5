package providersim

import (
	"net/http"
	"slices"
)

// Ledger lists every effect the simulator committed, once each, in the
// order they happened: what a test or the demo compares with the orders to
// prove that retries, replays and crashes charged, refunded and emailed
// exactly once. An idempotent replay adds nothing. It is the body of
// GET /_sim/ledger (docs/reference.md fixes the JSON).
type Ledger struct {
	// PaymentIntents are every PaymentIntent created, declined ones included.
	PaymentIntents []LedgerPaymentIntent `json:"payment_intents"`
	// Refunds are every refund made.
	Refunds []LedgerRefund `json:"refunds"`
	// Emails are every email accepted.
	Emails []LedgerEmail `json:"emails"`
}

// LedgerPaymentIntent is one PaymentIntent. Declined ones are included with
// status requires_payment_method, so "one succeeded charge per paid order"
// is checked on Status, not on the count.
type LedgerPaymentIntent struct {
	// ID is the pi_ id.
	ID string `json:"id"`
	// Amount is in the currency's smallest unit, as Stripe counts it.
	Amount int64 `json:"amount"`
	// Currency is the lower-case ISO code.
	Currency string `json:"currency"`
	// Status is the PaymentIntent's status now: succeeded,
	// requires_payment_method (declined, or created without a payment
	// method), requires_confirmation (created with one but not confirmed),
	// requires_action (waiting for 3-D Secure), processing, or canceled.
	Status string `json:"status"`
	// IdempotencyKey is the key the create was sent with; empty if none was.
	IdempotencyKey string `json:"idempotency_key"`
	// Metadata is what the create attached, outflow's order and event ids.
	Metadata map[string]string `json:"metadata"`
	// Created is the creation time in Unix seconds of the simulator's clock.
	Created int64 `json:"created"`
}

// LedgerRefund is one refund.
type LedgerRefund struct {
	// ID is the re_ id.
	ID string `json:"id"`
	// PaymentIntent is the pi_ id of the refunded charge's PaymentIntent.
	PaymentIntent string `json:"payment_intent"`
	// Amount is in the currency's smallest unit.
	Amount int64 `json:"amount"`
	// Status is the refund's status; the simulator's refunds succeed.
	Status string `json:"status"`
	// IdempotencyKey is the key the refund was sent with; empty if none was.
	IdempotencyKey string `json:"idempotency_key"`
}

// LedgerEmail is one accepted email, its Resend tags as a map.
type LedgerEmail struct {
	// ID is the email's id, a UUID as at Resend.
	ID string `json:"id"`
	// To are the recipients, a list even when the request sent one string.
	To []string `json:"to"`
	// Subject is the subject line.
	Subject string `json:"subject"`
	// Tags are the email's tags by name; outflow sets order_id and kind.
	Tags map[string]string `json:"tags"`
	// IdempotencyKey is the key the email was sent with; empty if none was.
	IdempotencyKey string `json:"idempotency_key"`
}

// Ledger returns a snapshot of every committed effect. The slices and maps
// are copies: the caller may keep or change them.
func (s *Simulator) Ledger() Ledger {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := Ledger{
		PaymentIntents: make([]LedgerPaymentIntent, 0, len(s.st.piOrder)),
		Refunds:        make([]LedgerRefund, 0, len(s.st.refundOrder)),
		Emails:         make([]LedgerEmail, 0, len(s.st.emails)),
	}
	for _, pi := range s.st.piOrder {
		l.PaymentIntents = append(l.PaymentIntents, LedgerPaymentIntent{
			ID: pi.id, Amount: pi.amount, Currency: pi.currency, Status: pi.status,
			IdempotencyKey: pi.idempotencyKey, Metadata: copyMap(pi.metadata), Created: pi.pos.created,
		})
	}
	for _, rf := range s.st.refundOrder {
		l.Refunds = append(l.Refunds, LedgerRefund{
			ID: rf.id, PaymentIntent: rf.paymentIntent, Amount: rf.amount, Status: rf.status, IdempotencyKey: rf.idempotencyKey,
		})
	}
	for _, e := range s.st.emails {
		l.Emails = append(l.Emails, LedgerEmail{
			ID: e.id, To: slices.Clone(e.to), Subject: e.subject, Tags: copyMap(e.tags), IdempotencyKey: e.idempotencyKey,
		})
	}
	return l
}

func (s *Simulator) serveLedger(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Ledger())
}
