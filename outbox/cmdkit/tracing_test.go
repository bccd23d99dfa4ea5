package cmdkit

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TestLogHandlerAddsTheSpan: a JSON line logged inside a span carries its
// trace_id and span_id; one logged without carries neither.
func TestLogHandlerAddsTheSpan(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
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

// TestStartTracingStopsWithoutALogger: a nil logger is slog.Default(), also
// when the last spans cannot be flushed (nothing listens on the endpoint);
// before, stop dereferenced the nil logger at every such exit.
func TestStartTracingStopsWithoutALogger(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
	tp, stop, err := StartTracing(context.Background(), func(k string) string { return env[k] }, "test", nil)
	require.NoError(t, err)
	require.NotNil(t, tp)
	_, span := tp.Tracer("test").Start(context.Background(), "unsent")
	span.End()
	require.NotPanics(t, stop)
}
