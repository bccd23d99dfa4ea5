package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/outflow/outflow/internal/telemetry"
)

// TestLogHandlerAddsTheSpan: a JSON line logged inside a span carries its
// trace_id and span_id; one logged without carries neither.
func TestLogHandlerAddsTheSpan(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	ctx, span := sdktrace.NewTracerProvider().Tracer("test").Start(context.Background(), "op")
	logger.InfoContext(ctx, "inside")
	span.End()
	logger.Info("outside")

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	require.Len(t, lines, 2)
	var in, out map[string]any
	require.NoError(t, json.Unmarshal(lines[0], &in))
	require.NoError(t, json.Unmarshal(lines[1], &out))
	require.Equal(t, span.SpanContext().TraceID().String(), in["trace_id"])
	require.Equal(t, span.SpanContext().SpanID().String(), in["span_id"])
	require.Equal(t, "test", in["component"])
	require.NotContains(t, out, "trace_id")
}

// TestSetupIsOffWithoutAnEndpoint: no OTEL_EXPORTER_OTLP_*ENDPOINT (or
// OTEL_SDK_DISABLED=true) leaves otel's globals alone; a bad protocol is
// refused.
func TestSetupIsOffWithoutAnEndpoint(t *testing.T) {
	before := otel.GetTracerProvider()
	for _, env := range []map[string]string{
		{},
		{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"},
	} {
		stop, err := telemetry.Setup(context.Background(), func(k string) string { return env[k] }, telemetry.ServiceStarter)
		require.NoError(t, err)
		require.False(t, telemetry.Enabled(), "%v", env)
		require.Equal(t, before, otel.GetTracerProvider(), "%v", env)
		require.NoError(t, stop(context.Background()))
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"}
	_, err := telemetry.Setup(context.Background(), func(k string) string { return env[k] }, telemetry.ServiceStarter)
	require.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_PROTOCOL")
	require.False(t, telemetry.Enabled())
}
