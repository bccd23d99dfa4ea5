package service

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsAddrEnv is the address a binary serves Prometheus /metrics on;
// unset means no metrics server.
const MetricsAddrEnv = "METRICS_ADDR"

// NewRegistry returns a registry with the Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// ServeMetrics serves reg's /metrics, and GET /healthz answering "ok", on
// addr until the returned server is shut down. The listener is opened before
// it returns, so a taken port is an error at start, not a log line later.
// /healthz is what a container healthcheck probes (cmd/healthcheck): the
// process is up and serving, which for the starter and the worker means their
// configuration was accepted and their start went through.
func ServeMetrics(addr string, reg *prometheus.Registry, logger *slog.Logger) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", MetricsAddrEnv, addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "addr", addr, ErrorKey, err)
		}
	}()
	logger.Info("serving metrics", "addr", l.Addr().String())
	return srv, nil
}
