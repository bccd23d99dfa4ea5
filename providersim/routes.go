package providersim

import (
	"fmt"
	"net/http"
)

// routes is the simulator's whole HTTP surface: the Stripe endpoints behind
// stripeAuth, the Resend endpoint behind resendAuth, and the /_sim test hooks,
// which take no key because only tests and the demo call them.
func (s *Simulator) routes() http.Handler {
	mux := http.NewServeMux()

	stripeAPI := func(h http.HandlerFunc) http.Handler { return s.stripeAuth(h) }
	mux.Handle("POST /v1/payment_intents", stripeAPI(s.createPaymentIntent))
	mux.Handle("GET /v1/payment_intents", stripeAPI(s.listPaymentIntents))
	mux.Handle("GET /v1/payment_intents/search", stripeAPI(s.searchPaymentIntents))
	mux.Handle("GET /v1/payment_intents/{id}", stripeAPI(s.retrievePaymentIntent))
	mux.Handle("POST /v1/payment_intents/{id}/cancel", stripeAPI(s.cancelPaymentIntent))
	mux.Handle("POST /v1/refunds", stripeAPI(s.createRefund))
	mux.Handle("GET /v1/refunds", stripeAPI(s.listRefunds))
	mux.Handle("GET /v1/refunds/{id}", stripeAPI(s.retrieveRefund))
	// Everything else under /v1/ answers like Stripe does for an unknown
	// route, so a client calling an endpoint the simulator lacks gets a
	// Stripe error it can decode instead of a plain-text 404.
	mux.Handle("/v1/", stripeAPI(s.unknownStripeRoute))

	mux.Handle("POST /emails", s.resendAuth(http.HandlerFunc(s.sendEmail)))

	mux.HandleFunc("GET /_sim/ledger", s.serveLedger)
	mux.HandleFunc("GET /_sim/stats", s.serveStats)
	mux.HandleFunc("GET /_sim/faults", s.serveFaults)
	mux.HandleFunc("POST /_sim/faults", s.serveInjectFault)
	mux.HandleFunc("DELETE /_sim/faults", s.serveClearFaults)
	mux.HandleFunc("POST /_sim/reset", s.serveReset)
	s.simPaymentRoutes(mux)
	mux.HandleFunc("GET /_sim/clock", s.serveClock)
	mux.HandleFunc("POST /_sim/clock", s.serveClock)
	mux.HandleFunc("GET /_sim/health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	return mux
}

// unknownStripeRoute answers a /v1/ path the simulator does not implement
// with Stripe's 404 error object (see routes for why).
func (s *Simulator) unknownStripeRoute(w http.ResponseWriter, r *http.Request) {
	s.writeStripe(w, r, stripeJSON(http.StatusNotFound, errorEnvelope{Error: &stripeError{
		Type: errorTypeInvalidRequest,
		Message: fmt.Sprintf("Unrecognized request URL (%s: %s). The provider simulator implements only the endpoints "+
			"outflow's activities use; see package providersim.", r.Method, r.URL.Path),
	}}))
}
