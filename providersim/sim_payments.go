package providersim

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// The test hooks that play what happens at Stripe after an API call
// answered: the customer's 3-D Secure authentication, a processing payment
// settling, a refund that fails after it was accepted, a dispute. Each
// changes the objects as Stripe would and makes the webhook event Stripe
// sends for it.

// dispute is the simulator's record of a Dispute.
type dispute struct {
	id            string
	created       int64
	amount        int64
	currency      string
	charge        string
	paymentIntent string
	reason        string
	status        string
}

// disputeJSON is Stripe's dispute object (the fields a webhook reader uses).
type disputeJSON struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Amount             int64             `json:"amount"`
	Charge             string            `json:"charge"`
	Created            int64             `json:"created"`
	Currency           string            `json:"currency"`
	IsChargeRefundable bool              `json:"is_charge_refundable"`
	Livemode           bool              `json:"livemode"`
	Metadata           map[string]string `json:"metadata"`
	PaymentIntent      string            `json:"payment_intent"`
	Reason             string            `json:"reason"`
	Status             string            `json:"status"`
}

func (d *dispute) json() *disputeJSON {
	return &disputeJSON{ID: d.id, Object: "dispute", Amount: d.amount, Charge: d.charge, Created: d.created,
		Currency: d.currency, Metadata: map[string]string{}, PaymentIntent: d.paymentIntent, Reason: d.reason, Status: d.status}
}

// Outcomes the hooks take.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
)

// hookError is a hook's refusal, as {"error": "..."}.
type hookError struct {
	status int
	msg    string
}

func (e *hookError) Error() string { return e.msg }

// Authenticate ends the 3-D Secure challenge of the PaymentIntent id, which
// is requires_action: OutcomeSucceeded charges the card
// (payment_intent.succeeded), OutcomeFailed leaves it requiring a payment
// method with payment_intent_authentication_failure
// (payment_intent.payment_failed).
func (s *Simulator) Authenticate(id, outcome string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	pi, err := s.pendingIntent(id, statusRequiresAction)
	if err != nil {
		return err
	}
	pm := s.st.paymentMethods[pi.paymentMethod]
	ch := &charge{id: newID("ch_"), created: now.Unix(), amount: pi.amount, currency: pi.currency, paymentIntent: pi.id, paymentMethod: pm}
	switch outcome {
	case OutcomeSucceeded:
		s.st.charges[ch.id] = ch
		pi.latestCharge = ch.id
		s.succeed(s.st, now, pi, ch, "")
	case OutcomeFailed:
		pi.status = statusRequiresPaymentMethod
		pi.paymentMethod = ""
		pi.lastPaymentError = &stripeError{Type: errorTypeInvalidRequest, Code: "payment_intent_authentication_failure",
			Message: "The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again.",
			DocURL:  "https://stripe.com/docs/error-codes/payment-intent-authentication-failure", PaymentMethod: pm.json()}
		s.log.Info("providersim: payment intent authentication failed", "id", pi.id)
		s.emit(s.st, now, EventPaymentIntentPaymentFailed, pi.id, s.st.paymentIntentJSON(pi, nil))
	default:
		return badOutcome(outcome)
	}
	return nil
}

// Settle ends the PaymentIntent id, which is processing: OutcomeSucceeded
// (payment_intent.succeeded) or OutcomeFailed, a generic decline
// (payment_intent.payment_failed).
func (s *Simulator) Settle(id, outcome string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	pi, err := s.pendingIntent(id, statusProcessing)
	if err != nil {
		return err
	}
	ch := s.st.charges[pi.latestCharge]
	switch outcome {
	case OutcomeSucceeded:
		s.succeed(s.st, now, pi, ch, "")
	case OutcomeFailed:
		ch.declineCode = "generic_decline"
		s.decline(s.st, now, pi, ch, "")
	default:
		return badOutcome(outcome)
	}
	return nil
}

// pendingIntent is the PaymentIntent id if its status is want.
func (s *Simulator) pendingIntent(id, want string) (*paymentIntent, error) {
	pi, ok := s.st.paymentIntents[id]
	switch {
	case !ok:
		return nil, &hookError{http.StatusNotFound, "no such payment_intent: " + id}
	case pi.status != want:
		return nil, &hookError{http.StatusConflict, fmt.Sprintf("payment_intent %s is %s, not %s", id, pi.status, want)}
	}
	return pi, nil
}

func badOutcome(outcome string) error {
	return &hookError{http.StatusBadRequest, fmt.Sprintf("outcome %q: want %q or %q", outcome, OutcomeSucceeded, OutcomeFailed)}
}

// FailRefund fails the refund id after Stripe had accepted it, with reason
// (Stripe's failure_reason, e.g. lost_or_stolen_card; unknown when empty):
// the money goes back to the merchant's balance, the charge is refundable
// again, and charge.refund.updated reports it.
func (s *Simulator) FailRefund(id, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rf, ok := s.st.refunds[id]
	switch {
	case !ok:
		return &hookError{http.StatusNotFound, "no such refund: " + id}
	case rf.status != statusSucceeded:
		return &hookError{http.StatusConflict, fmt.Sprintf("refund %s is %s, not succeeded", id, rf.status)}
	}
	if reason == "" {
		reason = "unknown"
	}
	rf.status = OutcomeFailed
	rf.failureReason = reason
	s.st.charges[rf.charge].amountRefunded -= rf.amount
	s.log.Info("providersim: refund failed", "id", rf.id, "payment_intent", rf.paymentIntent, "reason", reason)
	s.emit(s.st, s.now(), EventChargeRefundUpdated, rf.id, rf.json())
	return nil
}

// Dispute opens a dispute of the PaymentIntent id's charge, which
// succeeded, for its whole amount with reason (fraudulent when empty), and
// makes charge.dispute.created. It returns the dispute's id.
func (s *Simulator) Dispute(id, reason string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pi, err := s.pendingIntent(id, statusSucceeded)
	if err != nil {
		return "", err
	}
	if reason == "" {
		reason = "fraudulent"
	}
	now := s.now()
	ch := s.st.charges[pi.latestCharge]
	d := &dispute{id: newID("dp_"), created: now.Unix(), amount: ch.amount, currency: ch.currency, charge: ch.id,
		paymentIntent: pi.id, reason: reason, status: "needs_response"}
	s.st.disputes = append(s.st.disputes, d)
	s.log.Info("providersim: dispute created", "id", d.id, "payment_intent", pi.id, "reason", reason)
	s.emit(s.st, now, EventChargeDisputeCreated, d.id, d.json())
	return d.id, nil
}

// simRequest is the JSON body of the hooks above.
type simRequest struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason"`
}

// serveSimPayment wraps a hook as POST /_sim/...{id}/...
func (s *Simulator) serveSimPayment(hook func(id string, req simRequest) (map[string]any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req simRequest
		if r.ContentLength != 0 {
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body: " + err.Error()})
				return
			}
		}
		out, err := hook(r.PathValue("id"), req)
		if err != nil {
			status := http.StatusInternalServerError
			if se, ok := err.(*hookError); ok {
				status = se.status
			}
			writeJSON(w, status, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// simPaymentRoutes are the hooks' routes.
func (s *Simulator) simPaymentRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /_sim/payment_intents/{id}/authenticate", s.serveSimPayment(func(id string, req simRequest) (map[string]any, error) {
		return map[string]any{"payment_intent": id, "outcome": req.Outcome}, s.Authenticate(id, req.Outcome)
	}))
	mux.HandleFunc("POST /_sim/payment_intents/{id}/settle", s.serveSimPayment(func(id string, req simRequest) (map[string]any, error) {
		return map[string]any{"payment_intent": id, "outcome": req.Outcome}, s.Settle(id, req.Outcome)
	}))
	mux.HandleFunc("POST /_sim/payment_intents/{id}/dispute", s.serveSimPayment(func(id string, req simRequest) (map[string]any, error) {
		d, err := s.Dispute(id, req.Reason)
		return map[string]any{"payment_intent": id, "dispute": d}, err
	}))
	mux.HandleFunc("POST /_sim/refunds/{id}/fail", s.serveSimPayment(func(id string, req simRequest) (map[string]any, error) {
		return map[string]any{"refund": id, "failed": true}, s.FailRefund(id, req.Reason)
	}))
	mux.HandleFunc("GET /_sim/webhooks", s.serveWebhooks)
	mux.HandleFunc("POST /_sim/webhooks/{id}/resend", s.serveResendWebhook)
	mux.HandleFunc("POST /_sim/webhooks/hold", s.serveHoldWebhooks(true))
	mux.HandleFunc("POST /_sim/webhooks/release", s.serveHoldWebhooks(false))
}
