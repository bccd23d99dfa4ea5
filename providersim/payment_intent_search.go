package providersim

import (
	"fmt"
	"net/http"
)

// searchPaymentIntents is GET /v1/payment_intents/search. Results are newest
// first; next_page is an opaque cursor.
func (s *Simulator) searchPaymentIntents(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	if err := checkParams(v, "query", "limit", "page", "expand"); err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	raw := v.Get("query")
	if raw == "" {
		s.writeStripe(w, r, invalidRequest("parameter_missing", "query", "Missing required param: query.").response())
		return
	}
	q, err := parseSearchQuery(raw)
	if err != nil {
		s.writeStripe(w, r, invalidRequest("", "query", fmt.Sprintf("Invalid search query %q: %v.", raw, err)).response())
		return
	}
	limit, serr := parseLimit(v)
	if serr != nil {
		s.writeStripe(w, r, serr.response())
		return
	}
	expand, serr := formExpand(v, "data.latest_charge")
	if serr != nil {
		s.writeStripe(w, r, serr.response())
		return
	}
	var after *position
	if tok := v.Get("page"); tok != "" {
		c, ok := decodeCursor(tok)
		if !ok {
			s.writeStripe(w, r, invalidRequest("", "page", "Invalid page token: "+tok).response())
			return
		}
		after = &c
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	var matching []*paymentIntent
	for _, pi := range s.st.piOrder {
		if q.match(pi) {
			matching = append(matching, pi)
		}
	}
	items, hasMore := page(matching, func(pi *paymentIntent) position { return pi.pos }, limit, after, nil)
	out := searchJSON{Object: "search_result", HasMore: hasMore, URL: "/v1/payment_intents/search"}
	data := make([]*paymentIntentJSON, 0, len(items))
	for _, pi := range items {
		data = append(data, s.st.paymentIntentJSON(pi, trimExpand(expand)))
	}
	out.Data = data
	if hasMore {
		next := encodeCursor(items[len(items)-1].pos)
		out.NextPage = &next
	}
	s.writeStripe(w, r, stripeJSON(http.StatusOK, out))
}
