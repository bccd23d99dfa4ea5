package providersim

import (
	"encoding/json"
	"net/http"
)

// response is a complete HTTP answer, kept as bytes so that an idempotent
// replay can send exactly what the first request got.
type response struct {
	status int
	body   []byte
	header http.Header

	// requestID is the Request-Id the response was first sent with, repeated
	// as Original-Request when Stripe's layer replays it.
	requestID string
}

// writeResponse sends resp unchanged. Every answer of every API ends here, so
// a replayed response goes out exactly as the first one did; the
// Content-Type defaults to JSON because every body the simulator sends is.
func writeResponse(w http.ResponseWriter, resp response) {
	for k, vs := range resp.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

// stripeJSON renders v indented, as Stripe's API does.
func stripeJSON(status int, v any) response {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		// Only the simulator's own types reach here; failing to encode them
		// is a bug in this package.
		panic("providersim: encode response: " + err.Error())
	}
	return response{status: status, body: append(b, '\n')}
}

// writeStripe writes a Stripe API response with the headers stripe-go reads:
// Request-Id (kept on errors for support) and the echoed Idempotency-Key.
func (s *Simulator) writeStripe(w http.ResponseWriter, r *http.Request, resp response) {
	h := w.Header()
	if h.Get("Request-Id") == "" {
		h.Set("Request-Id", newID("req_"))
	}
	h.Set("Stripe-Version", stripeAPIVersion(r))
	if k := r.Header.Get("Idempotency-Key"); k != "" && r.Method == http.MethodPost {
		h.Set("Idempotency-Key", k)
	}
	writeResponse(w, resp)
}

// stripeAPIVersion echoes the version the client pinned; stripe-go v76 pins
// 2023-10-16, which is also the shape the simulator's objects follow.
func stripeAPIVersion(r *http.Request) string {
	if v := r.Header.Get("Stripe-Version"); v != "" {
		return v
	}
	return objectAPIVersion
}

// objectAPIVersion is the API version whose shape the simulator's objects
// follow, and the api_version of its webhook events.
const objectAPIVersion = "2023-10-16"

// writeJSON answers the simulator's own /_sim endpoints.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeResponse(w, response{status: status, body: append(b, '\n')})
}
