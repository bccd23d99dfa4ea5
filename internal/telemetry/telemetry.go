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
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The default service names (OTEL_SERVICE_NAME overrides them).
const (
	ServiceOrderAPI    = "outflow-orderapi"
	ServiceStarter     = "outflow-starter"
	ServiceWorker      = "outflow-worker"
	ServiceInventory   = "outflow-inventory"
	ServiceProviderSim = "outflow-providersim"
)

// The standard variables Setup reads itself; the SDK and the exporters read
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
// main's os.Getenv) names an OTLP endpoint: it sets otel's global tracer
// provider (batching to the OTLP exporter) and the W3C trace-context and
// baggage propagator. It returns the function that flushes and stops it,
// which the main calls before it exits; a no-op when tracing is off.
func Setup(ctx context.Context, getenv func(string) string, defaultService string) (shutdown func(context.Context) error, err error) {
	off := func(context.Context) error { return nil }
	if strings.EqualFold(getenv(SDKDisabledEnv), "true") || getenv(EndpointEnv)+getenv(TracesEndpointEnv) == "" {
		return off, nil
	}
	protocol := getenv(TracesProtocolEnv)
	if protocol == "" {
		protocol = getenv(ProtocolEnv)
	}
	var exp *otlptrace.Exporter
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return off, fmt.Errorf("%s=%q: want grpc or http/protobuf", ProtocolEnv, protocol)
	}
	if err != nil {
		return off, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	name := getenv(ServiceNameEnv)
	if name == "" {
		name = defaultService
	}
	// The SDK's default resource reads OTEL_RESOURCE_ATTRIBUTES; the
	// service name is the variable's or the binary's default.
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", name)))
	if err != nil {
		return off, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	enabled.Store(true)
	return func(ctx context.Context) error {
		enabled.Store(false)
		return errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx))
	}, nil
}

// LogHandler wraps h so that a record logged with a context holding a
// valid span (logger.InfoContext(ctx, ...)) carries its trace_id and
// span_id, and the log lines of every binary can be joined to the trace.
func LogHandler(h slog.Handler) slog.Handler { return traceHandler{h} }

type traceHandler struct{ slog.Handler }

func (t traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return t.Handler.Handle(ctx, r)
}

func (t traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{t.Handler.WithAttrs(attrs)}
}

func (t traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{t.Handler.WithGroup(name)}
}

// Start is [Setup] for a main that defers the stop: stop flushes the last
// spans (for at most five seconds) and logs a failure to logger.
func Start(ctx context.Context, getenv func(string) string, defaultService string, logger *slog.Logger) (stop func(), err error) {
	shutdown, err := Setup(ctx, getenv, defaultService)
	if err != nil {
		return func() {}, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			logger.Warn("tracing: flushing the last spans failed", "error", err)
		}
	}, nil
}
