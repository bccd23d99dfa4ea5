package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHealthcheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			_, _ = w.Write([]byte("ok\n"))
		case "/slow":
			time.Sleep(300 * time.Millisecond)
		default:
			http.Error(w, "database unreachable", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"healthy", []string{srv.URL + "/healthz"}, 0, "", ""},
		{"unhealthy answer", []string{srv.URL + "/down"}, 1, "", "503 Service Unavailable: database unreachable"},
		{"timeout", []string{"-timeout", "50ms", srv.URL + "/slow"}, 1, "", "deadline exceeded"},
		{"nothing listens", []string{"http://127.0.0.1:1/healthz"}, 1, "", "connection refused"},
		{"not a URL", []string{"starter:9090"}, 1, "", "not an http(s) URL"},
		{"no URL", nil, 2, "", "want exactly one URL"},
		{"help", []string{"-h"}, 0, "usage: healthcheck", ""},
		{"long help", []string{"--help"}, 0, "usage: healthcheck", ""},
		{"version", []string{"--version"}, 0, "healthcheck ", ""},
		{"unknown flag", []string{"-bogus"}, 2, "", "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tc.args, &out, &errOut)
			require.Equal(t, tc.code, code, "stdout %q stderr %q", out.String(), errOut.String())
			require.Contains(t, out.String(), tc.stdout)
			require.Contains(t, errOut.String(), tc.stderr)
			if tc.stdout == "" {
				require.Empty(t, out.String())
			}
		})
	}
}
