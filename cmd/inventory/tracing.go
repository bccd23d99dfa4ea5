package main

import (
	"context"
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

// serviceName is the service's default OTEL_SERVICE_NAME.
const serviceName = "outflow-inventory"

// startTracing turns tracing on the standard way when OTEL_EXPORTER_OTLP_ENDPOINT
// (or _TRACES_ENDPOINT) is set, as every outflow binary does; the service
// imports only the outbox's public packages, so it has its own few lines
// for what the others share in internal/telemetry. Off, it returns nil.
func startTracing(ctx context.Context, getenv func(string) string, logger *slog.Logger) (stop func(), tp trace.TracerProvider, err error) {
	stop = func() {}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") ||
		getenv("OTEL_EXPORTER_OTLP_ENDPOINT")+getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return stop, nil, nil
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
		return stop, nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: want grpc or http/protobuf", protocol)
	}
	if err != nil {
		return stop, nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	name := getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = serviceName
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", name)))
	if err != nil {
		return stop, nil, err
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(sdk)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sdk.Shutdown(ctx); err != nil {
			logger.Warn("tracing: flushing the last spans failed", "err", err)
		}
	}, sdk, nil
}

// traceHandler adds trace_id and span_id to a record logged inside a span.
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
