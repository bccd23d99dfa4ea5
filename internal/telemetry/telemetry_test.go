package telemetry_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"

	"github.com/outflow/outflow/internal/telemetry"
)

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

// TestStartStops: the stop Start returns ends, off and on. (Its closure
// once called itself: every main deferring it died of a stack overflow
// on SIGTERM.)
func TestStartStops(t *testing.T) {
	for _, env := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
	} {
		stop, err := telemetry.Start(context.Background(), func(k string) string { return env[k] }, telemetry.ServiceStarter, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		require.Equal(t, len(env) > 0, telemetry.Enabled(), "%v", env)
		stop()
		require.False(t, telemetry.Enabled(), "stopped: %v", env)
	}
}
