package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/outflow/outflow/internal/dev/jaeger"
	"github.com/outflow/outflow/internal/telemetry"
)

// tracing is where the demo's binaries send their spans.
type tracing struct {
	endpoint string // OTEL_EXPORTER_OTLP_ENDPOINT of the children
	ui       string // Jaeger's base URL; "" when the endpoint is the user's own
	viewer   string // the trace pages' base URL (jaeger.Viewer), with ui
	how      string
	stop     func()
}

// viewerPort is where the demo serves its trace pages when it is free:
// Jaeger's own UI port, which the Jaeger built here leaves unused.
const viewerPort = 16686

// demoService is the service name of the demo's own spans: one per order,
// from its placement to its final state, the parent of the order API's
// spans of the requests the demo sends for it.
const demoService = "outflow-demo"

// ensureTracing uses OTEL_EXPORTER_OTLP_ENDPOINT if set, else builds
// bin/jaeger when it is older than the tools module's go.sum and starts
// it; then it turns the demo's own tracing on, to the same endpoint.
func ensureTracing(ctx context.Context, root, dataDir string) (*tracing, error) {
	tr := &tracing{endpoint: os.Getenv(telemetry.EndpointEnv), how: telemetry.EndpointEnv, stop: func() {}}
	if tr.endpoint == "" {
		bin, err := buildTool(ctx, root, "jaeger", "github.com/jaegertracing/jaeger/cmd/jaeger", say)
		if err != nil {
			return nil, err
		}
		j, err := jaeger.Start(ctx, jaeger.Options{Bin: bin, Dir: filepath.Join(dataDir, "logs")})
		if err != nil {
			return nil, err
		}
		tr.endpoint, tr.ui, tr.how, tr.stop = j.OTLPEndpoint(), j.URL(), "Jaeger (bin/jaeger, spans in memory)", j.Stop
		addr, err := preferredAddr(viewerPort)
		if err != nil {
			tr.stop()
			return nil, err
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			tr.stop()
			return nil, fmt.Errorf("trace pages on %s: %w", addr, err)
		}
		srv := &http.Server{Handler: jaeger.Viewer(j.URL()), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		tr.viewer = "http://" + addr
		tr.stop = func() { _ = srv.Close(); j.Stop() }
	}
	// The OTLP exporter reads the variables itself; the children inherit
	// them. The Jaeger started here takes OTLP over HTTP only.
	if err := os.Setenv(telemetry.EndpointEnv, tr.endpoint); err != nil {
		tr.stop()
		return nil, err
	}
	if tr.ui != "" {
		if err := os.Setenv(telemetry.ProtocolEnv, "http/protobuf"); err != nil {
			tr.stop()
			return nil, err
		}
	}
	shutdown, err := telemetry.Setup(ctx, os.Getenv, demoService)
	if err != nil {
		tr.stop()
		return nil, err
	}
	stopJaeger := tr.stop
	tr.stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(ctx)
		stopJaeger()
	}
	return tr, nil
}

// link is where to see a trace: the demo's page of it over the Jaeger it
// started (that build has no UI assets; a Jaeger with its UI shows the
// same id at /trace/ID), else its id.
func (tr *tracing) link(traceID string) string {
	if tr.viewer == "" {
		return "trace id " + traceID + " (at " + tr.endpoint + ")"
	}
	return jaeger.TraceURL(tr.viewer, traceID)
}

// orderSpan starts an order's span: the requests sent with its context
// (the create, the cancel) carry it, so everything they cause is one trace.
func orderSpan(ctx context.Context, sc scenario) (context.Context, trace.Span) {
	return otel.Tracer("github.com/outflow/outflow/cmd/demo").Start(ctx, fmt.Sprintf("demo order: %s", sc.name))
}
