package providersim

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// apiKeyContextKey carries the key the auth middleware accepted to the
// handlers. It is its own unexported type so that no other context value can
// collide with it.
type apiKeyContextKey struct{}

// apiKeyFrom returns the caller's API key that the auth middleware checked.
// Idempotency keys are scoped by it.
func apiKeyFrom(r *http.Request) string {
	k, _ := r.Context().Value(apiKeyContextKey{}).(string)
	return k
}

// stripeAuth accepts any sk_test_ key, sent as a Bearer token or as the
// Basic-auth user name (curl -u sk_test_...:), the two forms Stripe accepts.
func (s *Simulator) stripeAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := ""
		if user, _, ok := r.BasicAuth(); ok {
			key = user
		} else if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			key = strings.TrimSpace(v)
		}
		switch {
		case key == "":
			s.writeStripe(w, r, stripeJSON(http.StatusUnauthorized, errorEnvelope{Error: &stripeError{
				Type: errorTypeInvalidRequest,
				Message: "You did not provide an API key. You need to provide your API key in the Authorization header, " +
					"using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication " +
					"for details, or we can help at https://support.stripe.com/.",
			}}))
			return
		case !strings.HasPrefix(key, "sk_test_") || len(key) == len("sk_test_"):
			// Live keys are refused on purpose: a process pointed at the
			// simulator must never look as if it could move real money.
			s.writeStripe(w, r, stripeJSON(http.StatusUnauthorized, errorEnvelope{Error: &stripeError{
				Type:    errorTypeInvalidRequest,
				Message: fmt.Sprintf("Invalid API Key provided: %s. The provider simulator accepts only test-mode secret keys (sk_test_...).", redactKey(key)),
			}}))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), apiKeyContextKey{}, key)))
	})
}

// resendAuth accepts any re_ key as a Bearer token, as Resend does.
func (s *Simulator) resendAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		key = strings.TrimSpace(key)
		switch {
		case !ok || key == "":
			writeResponse(w, resendError(http.StatusUnauthorized, "missing_api_key",
				"Missing API key in the authorization header. Include the following header 'Authorization: Bearer YOUR_API_KEY' in the request."))
			return
		case !strings.HasPrefix(key, "re_") || len(key) == len("re_"):
			writeResponse(w, resendError(http.StatusForbidden, "invalid_api_key", "API key is invalid"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), apiKeyContextKey{}, key)))
	})
}

// redactKey masks a refused key in the error message, keeping its first 8
// and last 4 characters (as Stripe does) so that a person can tell which key
// was sent without the message putting the whole key in a log.
func redactKey(key string) string {
	if len(key) <= 12 {
		return strings.Repeat("*", len(key))
	}
	return key[:8] + strings.Repeat("*", len(key)-12) + key[len(key)-4:]
}
