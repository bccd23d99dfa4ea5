// Package telemetry turns tracing on in an outflow binary the standard
// OpenTelemetry way, and only from its main: OTLP to
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), over
// the protocol OTEL_EXPORTER_OTLP_PROTOCOL names (http/protobuf by default,
// or grpc), sampled as OTEL_TRACES_SAMPLER says, under OTEL_SERVICE_NAME or
// the binary's default name; every other OTEL_* variable is read by the
// SDK as its specification says. With no endpoint set (or
// OTEL_SDK_DISABLED=true) tracing is off: nothing is set up and otel's
// globals stay no-ops. The libraries (outbox, the Temporal publisher) never
// read the environment: they take otel's globals, which [Setup] sets.
//
// It links no Temporal package, so internal/service can wrap every
// binary's logger with [LogHandler]; the Temporal tracing interceptor is
// internal/temporalclient's.
package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/outflow/outflow/outbox/cmdkit"
)

// The default service names (OTEL_SERVICE_NAME overrides them).
const (
	ServiceOrderAPI    = "outflow-orderapi"
	ServiceStarter     = "outflow-starter"
	ServiceWorker      = "outflow-worker"
	ServiceInventory   = "outflow-inventory"
	ServiceProviderSim = "outflow-providersim"
)

// The standard variables Setup reads (cmdkit.StartTracing); the SDK and the exporters read
// the others (OTEL_TRACES_SAMPLER, OTEL_EXPORTER_OTLP_HEADERS, ...).
const (
	EndpointEnv       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	TracesEndpointEnv = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	ProtocolEnv       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	TracesProtocolEnv = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	ServiceNameEnv    = "OTEL_SERVICE_NAME"
	SDKDisabledEnv    = "OTEL_SDK_DISABLED"
)

var enabled atomic.Bool

// Enabled reports whether Setup turned tracing on in this process.
func Enabled() bool { return enabled.Load() }

// Setup turns tracing on when the environment (read through getenv, the
// main's os.Getenv) names an OTLP endpoint (cmdkit.StartTracing: otel's
// global tracer provider, batching to the OTLP exporter, and the W3C
// trace-context and baggage propagator). It returns the function that
// flushes and stops it, which the main calls before it exits; a no-op when
// tracing is off.
func Setup(ctx context.Context, getenv func(string) string, defaultService string) (shutdown func(context.Context) error, err error) {
	tp, _, err := cmdkit.StartTracing(ctx, getenv, defaultService, nil)
	if err != nil || tp == nil {
		return func(context.Context) error { return nil }, err
	}
	enabled.Store(true)
	return func(ctx context.Context) error {
		enabled.Store(false)
		return errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx))
	}, nil
}

// LogHandler wraps h so that a record logged with a context holding a
// valid span carries its trace_id and span_id (cmdkit.LogHandler).
func LogHandler(h slog.Handler) slog.Handler { return cmdkit.LogHandler(h) }

// Start is [Setup] for a main that defers the stop: stop flushes the last
// spans (for at most five seconds) and logs a failure to logger.
func Start(ctx context.Context, getenv func(string) string, defaultService string, logger *slog.Logger) (stop func(), err error) {
	tp, stopTracing, err := cmdkit.StartTracing(ctx, getenv, defaultService, logger)
	if tp != nil {
		enabled.Store(true)
	}
	return func() { enabled.Store(false); stopTracing() }, err
}
