package providersim

import (
	"fmt"
	"net/http"
	"net/url"
)

// listPaymentIntents is GET /v1/payment_intents: newest first, filtered by
// created and customer, paged with starting_after/ending_before. It is how
// reconciliation scans a time window once an idempotency key has expired.
func (s *Simulator) listPaymentIntents(w http.ResponseWriter, r *http.Request) {
	lq, err := parseListQuery(r.URL.Query(), "created", "customer", "limit", "starting_after", "ending_before", "expand")
	if err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	q, limit, created := lq.q, lq.limit, lq.created
	expand, err := formExpand(q, "data.latest_charge")
	if err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	customer := q.Get("customer")

	s.mu.Lock()
	defer s.mu.Unlock()
	after, before, err := s.st.piCursors(q)
	if err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	var matching []*paymentIntent
	for _, pi := range s.st.piOrder {
		if created.match(pi.pos.created) && (customer == "" || pi.customer == customer) {
			matching = append(matching, pi)
		}
	}
	items, hasMore := page(matching, func(pi *paymentIntent) position { return pi.pos }, limit, after, before)
	data := make([]*paymentIntentJSON, 0, len(items))
	for _, pi := range items {
		data = append(data, s.st.paymentIntentJSON(pi, trimExpand(expand)))
	}
	s.writeStripe(w, r, stripeJSON(http.StatusOK, listJSON{Object: "list", Data: data, HasMore: hasMore, URL: "/v1/payment_intents"}))
}

// piCursors resolves starting_after and ending_before to positions.
func (st *store) piCursors(q url.Values) (after, before *position, err *stripeError) {
	for name, dst := range map[string]**position{"starting_after": &after, "ending_before": &before} {
		id := q.Get(name)
		if id == "" {
			continue
		}
		pi, ok := st.paymentIntents[id]
		if !ok {
			return nil, nil, invalidRequest("resource_missing", name, fmt.Sprintf("No such payment_intent: '%s'", id))
		}
		p := pi.pos
		*dst = &p
	}
	return after, before, nil
}
