package cmdkit

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a registry with the Go runtime and process collectors,
// to which a binary adds its components' collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// ServeMetrics serves reg's /metrics, and GET /healthz answering "ok", on
// addr until the returned server is shut down, logging the bound address
// and a failure of the server on logger. The listener is opened before it
// returns, so a taken port is its error (net.Listen's, which the caller
// prefixes with its setting), not a log line later. /healthz is what a
// container healthcheck probes: the process is up and serving.
func ServeMetrics(addr string, reg *prometheus.Registry, logger *slog.Logger) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "addr", addr, "error", err)
		}
	}()
	logger.Info("serving metrics", "addr", l.Addr().String())
	return srv, nil
}
