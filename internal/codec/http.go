package codec

import (
	"crypto/subtle"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"go.temporal.io/sdk/converter"

	"github.com/outflow/outflow/outbox/hostcheck"
)

// ServerOptions configures [NewHTTPHandler].
type ServerOptions struct {
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every /encode and /decode (CODECSERVER_TOKEN).
	Token string
	// CORSOrigin is the Web UI's origin (CODECSERVER_CORS_ORIGIN, e.g.
	// http://127.0.0.1:8233), allowed to call from the browser. Optional:
	// no CORS headers without it, and no browser page may call.
	CORSOrigin string
	// AllowedHosts are the Host headers the server answers
	// (CODECSERVER_ALLOWED_HOSTS): "host:port", or "host" for any port.
	// Optional: defaulted to the loopback names (localhost, 127.0.0.1,
	// ::1) on any port. A request for another host is refused, so a web
	// page that rebinds its own name to this address reads nothing.
	AllowedHosts []string
	// MaxBody bounds a request body. Optional: defaulted to 64 MiB.
	MaxBody int64
}

// HostsEnv names the codec server's Host allow-list (comma-separated).
const HostsEnv = "CODECSERVER_ALLOWED_HOSTS"

// LoopbackHosts are the names of the loopback address on port (any port
// when port is ""): hostcheck's, which outboxctl serve shares.
func LoopbackHosts(port string) []string { return hostcheck.Loopback(port) }

// NewHTTPHandler serves Temporal's codec server protocol (POST .../encode
// and .../decode with a Payloads message as protobuf JSON; only the last
// path segment counts) through the SDK's converter.NewPayloadCodecHTTPHandler,
// adding CORS for the Web UI and bearer authentication. /healthz answers
// without authentication.
//
// Without a token a browser is the threat: any page the operator visits
// can send requests to a loopback address. So every request must name an
// allowed host (a DNS-rebinding page names its own), a request from a
// browser page must come from CORSOrigin, and /encode and /decode take
// application/json only: the Web UI and the CLI send it, and it is not a
// "simple" content type, so a browser asks (a CORS preflight) before it
// sends one from another origin.
func NewHTTPHandler(codecs []converter.PayloadCodec, opts ServerOptions) http.Handler {
	codec := converter.NewPayloadCodecHTTPHandler(codecs...)
	if opts.MaxBody <= 0 {
		opts.MaxBody = 64 << 20
	}
	hosts := opts.AllowedHosts
	if len(hosts) == 0 {
		hosts = LoopbackHosts("")
	}
	want := []byte("Bearer " + opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostcheck.Allowed(r.Host, hosts) {
			http.Error(w, fmt.Sprintf("forbidden: Host %q is not a name of this codec server (allowed: %s; set %s)",
				r.Host, strings.Join(hosts, ", "), HostsEnv), http.StatusForbidden)
			return
		}
		origin := r.Header.Get("Origin")
		if opts.CORSOrigin != "" && origin == opts.CORSOrigin {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", opts.CORSOrigin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Headers", "Authorization,Authorization-Extras,Content-Type,X-Namespace")
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
		if origin != "" && origin != opts.CORSOrigin {
			http.Error(w, fmt.Sprintf("forbidden: requests from the page at %s are not allowed (only the Web UI's origin, CODECSERVER_CORS_ORIGIN)", origin),
				http.StatusForbidden)
			return
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); r.Method == http.MethodPost && mt != "application/json" {
			http.Error(w, "unsupported media type: send the Payloads as Content-Type: application/json", http.StatusUnsupportedMediaType)
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
