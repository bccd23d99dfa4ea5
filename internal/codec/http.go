package codec

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"go.temporal.io/sdk/converter"
)

// ServerOptions configures [NewHTTPHandler].
type ServerOptions struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every /encode and /decode (CODECSERVER_TOKEN).
	Token string
	// CORSOrigin is the Web UI's origin (CODECSERVER_CORS_ORIGIN, e.g.
	// http://127.0.0.1:8233), allowed to call from the browser. Optional:
	// no CORS headers without it.
	CORSOrigin string
	// MaxBody bounds a request body. Optional: defaulted to 64 MiB.
	MaxBody int64
}

// NewHTTPHandler serves Temporal's codec server protocol (POST .../encode
// and .../decode with a Payloads message as protobuf JSON; only the last
// path segment counts) through the SDK's converter.NewPayloadCodecHTTPHandler,
// adding CORS for the Web UI and bearer authentication. /healthz answers
// without authentication.
func NewHTTPHandler(codecs []converter.PayloadCodec, opts ServerOptions) http.Handler {
	codec := converter.NewPayloadCodecHTTPHandler(codecs...)
	if opts.MaxBody <= 0 {
		opts.MaxBody = 64 << 20
	}
	want := []byte("Bearer " + opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if opts.CORSOrigin != "" && r.Header.Get("Origin") == opts.CORSOrigin {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", opts.CORSOrigin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Headers", "Authorization,Content-Type,X-Namespace")
			h.Set("Access-Control-Allow-Methods", "POST,OPTIONS")
			h.Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions { // a preflight carries no credentials
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.URL.Path == "/healthz" {
			_, _ = w.Write([]byte("ok\n"))
			return
		}
		if opts.Token != "" && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(r.Header.Get("Authorization"))), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="outflow codec server"`)
			http.Error(w, "unauthorized: send Authorization: Bearer <CODECSERVER_TOKEN>", http.StatusUnauthorized)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, opts.MaxBody)
		codec.ServeHTTP(w, r)
	})
}
