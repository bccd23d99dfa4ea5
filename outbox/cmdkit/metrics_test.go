package cmdkit

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeMetricsHealthz: the metrics listener answers GET /healthz (what
// a container healthcheck probes) beside
// /metrics, and nothing else.
func TestServeMetricsHealthz(t *testing.T) {
	var logs bytes.Buffer
	srv, err := ServeMetrics("127.0.0.1:0", NewRegistry(), slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	m := regexp.MustCompile(`addr=(\S+)`).FindStringSubmatch(logs.String())
	require.NotNil(t, m, "ServeMetrics logs the bound address: %s", logs.String())
	base := "http://" + m[1]

	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := get("/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "go_goroutines")
	code, _ = get("/other")
	require.Equal(t, http.StatusNotFound, code)
}
