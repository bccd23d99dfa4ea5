// Package cmdkit holds the helpers the library's commands (outbox/ctl,
// outbox/relaycmd) and a service's own main share: a connection string
// with its password masked ([Redact]), opening the pool ([Open]), flags
// written with two dashes ([ParseFlags], [PrintFlags]), --version's text
// ([Version]), the /metrics server ([NewRegistry], [ServeMetrics]), the
// check of a host:port setting ([CheckHostPort]) and OTLP tracing from the
// standard OTEL_* variables ([StartTracing], [LogHandler]).
//
// It links no Temporal package, so a binary that talks to no Temporal can
// use it, and it reads nothing of the process's environment itself: the
// main passes every setting, or its os.Getenv (only the OTLP exporters
// [StartTracing] makes read their OTEL_EXPORTER_OTLP_* variables, as the
// OpenTelemetry SDK specifies).
package cmdkit
