package orderhttp

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// bearerAuth checks "Authorization: Bearer <token>". A nil *bearerAuth lets
// every request through (no token configured).
type bearerAuth struct {
	// want is the SHA-256 of the token: comparing fixed-size digests in
	// constant time leaks neither the token's bytes nor its length.
	want [sha256.Size]byte
}

func newBearerAuth(token string) *bearerAuth {
	if token == "" {
		return nil
	}
	return &bearerAuth{want: sha256.Sum256([]byte(token))}
}

func (a *bearerAuth) wrap(next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			w.Header().Set("WWW-Authenticate", `Bearer realm="orderapi"`)
			writeError(w, &apiError{Status: http.StatusUnauthorized, Code: codeUnauthorized,
				Message: "send Authorization: Bearer <token> with the token configured in ORDERAPI_TOKEN"})
			return
		}
		got := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(got[:], a.want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="orderapi", error="invalid_token"`)
			writeError(w, &apiError{Status: http.StatusUnauthorized, Code: codeUnauthorized, Message: "the bearer token is not valid"})
			return
		}
		next.ServeHTTP(w, r)
	})
}
