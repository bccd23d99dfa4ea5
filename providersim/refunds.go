package providersim

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// refund is the simulator's record of a Refund.
type refund struct {
	pos                position
	id                 string
	amount             int64
	currency           string
	charge             string
	paymentIntent      string
	balanceTransaction string
	metadata           map[string]string
	reason             string
	status             string
	failureReason      string // set when the refund failed after it was accepted
	idempotencyKey     string
}

// createRefundParams are the validated parameters of POST /v1/refunds.
type createRefundParams struct {
	paymentIntent string
	charge        string
	amount        int64 // 0: everything not yet refunded
	metadata      map[string]string
	reason        string
}

var refundReasons = []string{"duplicate", "fraudulent", "requested_by_customer"}

func parseCreateRefund(v url.Values) (createRefundParams, *stripeError) {
	var p createRefundParams
	if err := checkParams(v, "payment_intent", "charge", "amount", "metadata", "reason", "expand"); err != nil {
		return p, err
	}
	if _, err := formExpand(v); err != nil {
		return p, err
	}
	p.paymentIntent, p.charge = v.Get("payment_intent"), v.Get("charge")
	if p.paymentIntent == "" && p.charge == "" {
		return p, invalidRequest("parameter_missing", "payment_intent",
			"One of the following params should be provided for this request: payment_intent or charge.")
	}
	amount, present, err := formInt(v, "amount")
	switch {
	case err != nil:
		return p, err
	case present && amount < 1:
		return p, invalidRequest("parameter_invalid_integer", "amount", "This value must be greater than or equal to 1.")
	}
	p.amount = amount
	if p.reason = v.Get("reason"); p.reason != "" && !slices.Contains(refundReasons, p.reason) {
		return p, invalidRequest("", "reason", fmt.Sprintf("Invalid reason: must be one of %v", refundReasons))
	}
	if p.metadata, err = formMetadata(v); err != nil {
		return p, err
	}
	return p, nil
}

// createRefund is POST /v1/refunds. Only payment_intents.create knows the
// decline fault, so refunds ignore the fault the pipeline hands them.
func (s *Simulator) createRefund(w http.ResponseWriter, r *http.Request) {
	serveStripeCreate(s, w, r, OperationRefundsCreate, "POST /v1/refunds", parseCreateRefund,
		func(st *store, now time.Time, _ fault, p createRefundParams, key string) response {
			return s.executeCreateRefund(st, now, p, key)
		})
}

// executeCreateRefund refunds the PaymentIntent's charge. The sum of a
// charge's refunds never exceeds its amount: a refund of a fully refunded
// charge is charge_already_refunded, one larger than what is left is
// amount_too_large, as at Stripe. Those errors are stored with the key like
// any response of an executed request.
func (s *Simulator) executeCreateRefund(st *store, now time.Time, p createRefundParams, key string) response {
	var ch *charge
	if p.paymentIntent != "" {
		pi, ok := st.paymentIntents[p.paymentIntent]
		if !ok {
			return invalidRequest("resource_missing", "payment_intent", fmt.Sprintf("No such payment_intent: '%s'", p.paymentIntent)).response()
		}
		if pi.status != statusSucceeded {
			return invalidRequest("", "payment_intent", fmt.Sprintf(
				"This PaymentIntent (%s) does not have a successful charge to refund.", pi.id)).response()
		}
		ch = st.charges[pi.latestCharge]
	}
	if p.charge != "" {
		c, ok := st.charges[p.charge]
		switch {
		case !ok:
			return invalidRequest("resource_missing", "charge", fmt.Sprintf("No such charge: '%s'", p.charge)).response()
		case ch != nil && ch != c:
			return invalidRequest("", "charge", fmt.Sprintf("Charge %s does not belong to PaymentIntent %s.", p.charge, p.paymentIntent)).response()
		case c.status != statusSucceeded:
			return invalidRequest("", "charge", fmt.Sprintf("Charge %s has not succeeded and cannot be refunded.", c.id)).response()
		}
		ch = c
	}

	left := ch.amount - ch.amountRefunded
	amount := p.amount
	switch {
	case left == 0:
		return invalidRequest("charge_already_refunded", "", fmt.Sprintf("Charge %s has already been refunded.", ch.id)).response()
	case amount == 0:
		amount = left
	case amount > left:
		return invalidRequest("amount_too_large", "amount", fmt.Sprintf(
			"Refund amount (%s) is greater than unrefunded amount on charge (%s)", money(amount, ch.currency), money(left, ch.currency))).response()
	}

	ch.amountRefunded += amount
	rf := &refund{
		pos:                position{created: now.Unix(), seq: st.nextSeq()},
		id:                 newID("re_"),
		amount:             amount,
		currency:           ch.currency,
		charge:             ch.id,
		paymentIntent:      ch.paymentIntent,
		balanceTransaction: newID("txn_"),
		metadata:           p.metadata,
		reason:             p.reason,
		status:             statusSucceeded,
		idempotencyKey:     key,
	}
	st.refunds[rf.id] = rf
	st.refundOrder = append(st.refundOrder, rf)
	s.log.Info("providersim: refund succeeded", "id", rf.id, "payment_intent", rf.paymentIntent, "amount", amount, "idempotency_key", key)
	return stripeJSON(http.StatusOK, rf.json())
}

// retrieveRefund is GET /v1/refunds/{id}.
func (s *Simulator) retrieveRefund(w http.ResponseWriter, r *http.Request) {
	if err := checkParams(r.URL.Query(), "expand"); err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	rf, ok := s.st.refunds[id]
	if !ok {
		s.writeStripe(w, r, resourceMissing("id", fmt.Sprintf("No such refund: '%s'", id)).response())
		return
	}
	s.writeStripe(w, r, stripeJSON(http.StatusOK, rf.json()))
}

// listRefunds is GET /v1/refunds, newest first, optionally of one
// payment_intent or charge: how a caller finds out whether a refund it lost
// the answer to exists.
func (s *Simulator) listRefunds(w http.ResponseWriter, r *http.Request) {
	lq, err := parseListQuery(r.URL.Query(), "payment_intent", "charge", "created", "limit", "starting_after", "ending_before", "expand")
	if err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	q, limit, created := lq.q, lq.limit, lq.created
	s.mu.Lock()
	defer s.mu.Unlock()
	var after, before *position
	for name, dst := range map[string]**position{"starting_after": &after, "ending_before": &before} {
		if id := q.Get(name); id != "" {
			rf, ok := s.st.refunds[id]
			if !ok {
				s.writeStripe(w, r, invalidRequest("resource_missing", name, fmt.Sprintf("No such refund: '%s'", id)).response())
				return
			}
			p := rf.pos
			*dst = &p
		}
	}
	var matching []*refund
	for _, rf := range s.st.refundOrder {
		if created.match(rf.pos.created) &&
			(q.Get("payment_intent") == "" || rf.paymentIntent == q.Get("payment_intent")) &&
			(q.Get("charge") == "" || rf.charge == q.Get("charge")) {
			matching = append(matching, rf)
		}
	}
	items, hasMore := page(matching, func(rf *refund) position { return rf.pos }, limit, after, before)
	data := make([]*refundJSON, 0, len(items))
	for _, rf := range items {
		data = append(data, rf.json())
	}
	s.writeStripe(w, r, stripeJSON(http.StatusOK, listJSON{Object: "list", Data: data, HasMore: hasMore, URL: "/v1/refunds"}))
}

// refundJSON is Stripe's refund object.
type refundJSON struct {
	ID                     string            `json:"id"`
	Object                 string            `json:"object"`
	Amount                 int64             `json:"amount"`
	BalanceTransaction     *string           `json:"balance_transaction"`
	Charge                 string            `json:"charge"`
	Created                int64             `json:"created"`
	Currency               string            `json:"currency"`
	FailureReason          *string           `json:"failure_reason,omitempty"`
	Metadata               map[string]string `json:"metadata"`
	PaymentIntent          string            `json:"payment_intent"`
	Reason                 *string           `json:"reason"`
	ReceiptNumber          *string           `json:"receipt_number"`
	SourceTransferReversal *string           `json:"source_transfer_reversal"`
	Status                 string            `json:"status"`
	TransferReversal       *string           `json:"transfer_reversal"`
}

func (rf *refund) json() *refundJSON {
	return &refundJSON{
		ID:                 rf.id,
		Object:             "refund",
		Amount:             rf.amount,
		BalanceTransaction: nullable(rf.balanceTransaction),
		Charge:             rf.charge,
		Created:            rf.pos.created,
		Currency:           rf.currency,
		Metadata:           copyMap(rf.metadata),
		PaymentIntent:      rf.paymentIntent,
		Reason:             nullable(rf.reason),
		Status:             rf.status,
		FailureReason:      nullable(rf.failureReason),
	}
}
