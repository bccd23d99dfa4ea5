package cmdkit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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

// StartTracing turns tracing on the standard OpenTelemetry way when the
// environment (read through getenv, the main's os.Getenv) names an OTLP
// endpoint, OTEL_EXPORTER_OTLP_ENDPOINT or _TRACES_ENDPOINT: it sets otel's
// global tracer provider, batching to the exporter of
// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL (http/protobuf by default, or
// grpc) under OTEL_SERVICE_NAME or defaultService, and the W3C
// trace-context and baggage propagator, and returns the provider. The SDK
// reads the other OTEL_* variables (sampler, headers, resource
// attributes). With no endpoint, or OTEL_SDK_DISABLED=true, tracing is
// off: tp is nil and otel's globals stay no-ops. stop flushes the last
// spans, for at most five seconds, and logs a failure on logger (nil:
// slog.Default()); it is a no-op when tracing is off.
func StartTracing(ctx context.Context, getenv func(string) string, defaultService string, logger *slog.Logger) (tp *sdktrace.TracerProvider, stop func(), err error) {
	stop = func() {}
	if logger == nil {
		logger = slog.Default()
	}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") ||
		getenv("OTEL_EXPORTER_OTLP_ENDPOINT")+getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, stop, nil
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var exp *otlptrace.Exporter
	switch protocol {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, stop, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want grpc or http/protobuf", protocol)
	}
	if err != nil {
		return nil, stop, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	name := getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = defaultService
	}
	// The SDK's default resource reads OTEL_RESOURCE_ATTRIBUTES.
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", name)))
	if err != nil {
		return nil, stop, fmt.Errorf("tracing: resource: %w", err)
	}
	tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := errors.Join(tp.ForceFlush(ctx), tp.Shutdown(ctx)); err != nil {
			logger.Warn("tracing: flushing the last spans failed", "error", err)
		}
	}, nil
}

// LogHandler wraps h so that a record logged with a context holding a
// valid span (logger.InfoContext(ctx, ...)) carries its trace_id and
// span_id, and a binary's log lines can be joined to the trace.
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
