package service

// MetricsAddrEnv is the address a binary serves Prometheus /metrics on
// (cmdkit.ServeMetrics, beside GET /healthz, which a container healthcheck
// probes: cmd/healthcheck); unset means no metrics server.
const MetricsAddrEnv = "METRICS_ADDR"
