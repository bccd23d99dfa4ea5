package providersim

import (
	"net/http"
	"net/url"
	"time"
)

// serveStripeCreate is the path every Stripe create endpoint shares: read
// the form, validate it (a rejected request stores no key), then run the
// create through the idempotency and fault pipeline of serveCall.
func serveStripeCreate[P any](s *Simulator, w http.ResponseWriter, r *http.Request, operation, endpoint string,
	parse func(url.Values) (P, *stripeError),
	execute func(st *store, now time.Time, f fault, p P, key string) response,
) {
	form, ok := s.stripePostForm(w, r)
	if !ok {
		return
	}
	p, perr := parse(form)
	if perr != nil {
		s.writeStripe(w, r, perr.response())
		return
	}
	key := r.Header.Get("Idempotency-Key")
	s.serveCall(w, r, call{
		operation:   operation,
		proto:       stripeProtocol{s},
		scope:       idemScope{api: "stripe", apiKey: apiKeyFrom(r), key: key},
		endpoint:    endpoint,
		fingerprint: fingerprint(form),
		execute: func(st *store, now time.Time, f fault) response {
			return execute(st, now, f, p, key)
		},
	})
}

// stripePostForm reads a form-encoded body and its Idempotency-Key, and
// rejects keys longer than Stripe's 255 characters.
func (s *Simulator) stripePostForm(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		s.writeStripe(w, r, invalidRequest("", "", "Invalid request body: "+err.Error()).response())
		return nil, false
	}
	if len(r.Header.Get("Idempotency-Key")) > 255 {
		s.writeStripe(w, r, invalidRequest("", "", "Idempotency-Key must be at most 255 characters long.").response())
		return nil, false
	}
	return r.PostForm, true
}
