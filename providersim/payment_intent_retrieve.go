package providersim

import (
	"fmt"
	"net/http"
)

// retrievePaymentIntent is GET /v1/payment_intents/{id}.
func (s *Simulator) retrievePaymentIntent(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := checkParams(q, "expand", "client_secret"); err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	expand, err := formExpand(q, "latest_charge")
	if err != nil {
		s.writeStripe(w, r, err.response())
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	pi, ok := s.st.paymentIntents[id]
	if !ok {
		s.writeStripe(w, r, resourceMissing("intent", fmt.Sprintf("No such payment_intent: '%s'", id)).response())
		return
	}
	s.writeStripe(w, r, stripeJSON(http.StatusOK, s.st.paymentIntentJSON(pi, expand)))
}
