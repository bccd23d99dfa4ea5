// Package jaeger pins Jaeger v1.75's all-in-one (cmd/jaeger, the v2 binary:
// an OpenTelemetry collector with Jaeger's storage and query), the trace
// backend of make demo and of the test that its trace links resolve; go.mod
// names it with a tool directive. A module of its own: Jaeger's graph wants
// newer gRPC, OpenTelemetry and Prometheus client versions than the Temporal
// server, CLI and UI of tools/go.mod are built and tested with, and must not
// move them.
package jaeger
