// Package hostcheck is the Host header check of outflow's local HTTP
// servers (the codec server, outboxctl serve): a page on another site that
// rebinds its own DNS name to a loopback address names that name in Host,
// so a server that answers only its own names gives such a page nothing.
package hostcheck

import (
	"net"
	"strings"
)

// Loopback are the names of the loopback address on port (any port when
// port is ""): localhost, 127.0.0.1 and ::1.
func Loopback(port string) []string {
	out := []string{"localhost", "127.0.0.1", "::1"}
	if port != "" {
		for i, h := range out {
			out[i] = net.JoinHostPort(h, port)
		}
	}
	return out
}

// Allowed reports whether a request's Host (hostport) is one of hosts: an
// entry "host:port" matches exactly, an entry "host" matches it on any
// port. Names compare case-insensitively, a trailing dot ignored.
func Allowed(hostport string, hosts []string) bool {
	norm := func(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }
	host, port, err := net.SplitHostPort(hostport)
	if err != nil { // no port: the scheme's default
		host, port = strings.Trim(hostport, "[]"), ""
	}
	for _, a := range hosts {
		ah, ap, err := net.SplitHostPort(a)
		if err != nil {
			ah, ap = strings.Trim(a, "[]"), ""
		}
		if norm(ah) == norm(host) && (ap == "" || ap == port) {
			return true
		}
	}
	return false
}
