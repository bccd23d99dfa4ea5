package testsuite

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/outflow/outflow/outbox/failpoints"
)

// otlpReceiver is a real OTLP/gRPC trace receiver (the collector's
// TraceService), in the test's process: it keeps every span it is sent,
// with the service.name of its resource.
type otlpReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	addr string

	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct {
	service string
	span    *tracepb.Span
}

func (r *otlpReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, receivedSpan{service: service, span: s})
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &otlpReceiver{addr: ln.Addr().String()}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return r
}

// find returns the first span that match says, waiting up to within.
func (r *otlpReceiver) find(t *testing.T, within time.Duration, what string, match func(receivedSpan) bool) receivedSpan {
	t.Helper()
	var found receivedSpan
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, s := range r.spans {
			if match(s) {
				found = s
				return true
			}
		}
		return false
	}, within, 100*time.Millisecond, "no span: %s; received: %s", what, stringerFunc(r.summary))
	return found
}

func (r *otlpReceiver) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, s := range r.spans {
		fmt.Fprintf(&b, "\n  %s %q trace %s parent %s", s.service, s.span.GetName(), hex.EncodeToString(s.span.GetTraceId()), hex.EncodeToString(s.span.GetParentSpanId()))
	}
	return b.String()
}

type stringerFunc func() string

func (f stringerFunc) String() string { return f() }

func spanAttr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

func intAttr(s *tracepb.Span, key string) int64 {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue().GetIntValue()
		}
	}
	return 0
}

// TestOneTraceFromTheRequestToTheCharge runs the order API, a starter
// (for each source: poll, cdc, log) and a worker as processes exporting OTLP/gRPC, by the
// standard OTEL_* variables only, to a real receiver: the request's server
// span (outflow-orderapi), the relay's publish of the order's event
// (outflow-starter, a child of the request's span, which wrote the event),
// the workflow start it made, and the worker's workflow and ChargePayment
// activity spans and the charge's HTTP request to the (simulated) Stripe
// API (outflow-worker) are one trace.
func TestOneTraceFromTheRequestToTheCharge(t *testing.T) {
	t.Parallel()
	for _, source := range []string{"poll", "cdc", "log"} {
		t.Run(source, func(t *testing.T) {
			t.Parallel()
			oneTraceFromTheRequestToTheCharge(t, NewStackWith(t, SharedEnv(t), StackOptions{Source: source}), false)
		})
	}
	// The relay dies between the workflow's start and the event's mark
	// (relay.after_publish): the next starter publishes the event again,
	// and that redelivery stays in the request's trace, a child of the
	// enqueuing span, as its second attempt.
	t.Run("poll-crash-after-publish", func(t *testing.T) {
		t.Parallel()
		oneTraceFromTheRequestToTheCharge(t, NewStack(t), true)
	})
}

func oneTraceFromTheRequestToTheCharge(t *testing.T, s *Stack, crash bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rcv := startOTLPReceiver(t)
	otel := []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + rcv.addr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_TRACES_SAMPLER=always_on",
	}
	s.OrderAPIEnv, s.RelayEnv, s.WorkerEnv = otel, otel, otel
	s.Start("orderapi", "")
	fp := ""
	if crash {
		fp = failpoints.RelayAfterPublish + "=crash"
	}
	starter := s.Start("starter", fp)
	s.Start("worker", "")

	// A customer of this test alone, whose email no span may carry.
	email := "trace-" + uuid.NewString()[:8] + "@customers.example"
	order, err := s.API().As(email).Create(ctx, "trace-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	if crash {
		require.NoError(t, starter.WaitKilled(ctx))
		s.Start("starter", "")
	}
	require.NoError(t, WaitStatus(ctx, s, order.OrderID, "confirmed", 2*time.Minute))

	const within = 30 * time.Second
	req := rcv.find(t, within, "the order API's POST /orders server span", func(s receivedSpan) bool {
		return s.service == "outflow-orderapi" && s.span.GetKind() == tracepb.Span_SPAN_KIND_SERVER &&
			strings.Contains(s.span.GetName()+spanAttr(s.span, "http.route")+spanAttr(s.span, "url.path"), "orders") &&
			spanAttr(s.span, "http.request.method") == "POST"
	})
	traceID := string(req.span.GetTraceId())
	inTrace := func(service, prefix string) func(receivedSpan) bool {
		return func(s receivedSpan) bool {
			return s.service == service && string(s.span.GetTraceId()) == traceID && strings.HasPrefix(s.span.GetName(), prefix)
		}
	}
	rcv.find(t, within, "the order API's write of the outbox event, a database span in the request's trace", func(s receivedSpan) bool {
		return s.service == "outflow-orderapi" && string(s.span.GetTraceId()) == traceID && s.span.GetKind() == tracepb.Span_SPAN_KIND_CLIENT &&
			spanAttr(s.span, "db.system.name") == "postgresql" && strings.Contains(spanAttr(s.span, "db.query.text"), "outbox_")
	})
	pub := rcv.find(t, within, "the starter's publish of OrderCreated in the request's trace", inTrace("outflow-starter", "outbox publish OrderCreated"))
	require.Equal(t, req.span.GetSpanId(), pub.span.GetParentSpanId(), "the publish is a child of the span that enqueued the event")
	if crash { // the crashed relay's spans died with it: this is the redelivery
		require.EqualValues(t, 2, intAttr(pub.span, "outflow.publish.attempt"), "the redelivery is the second attempt")
	}
	rcv.find(t, within, "the starter's workflow start in the request's trace", inTrace("outflow-starter", "StartWorkflow:"))
	rcv.find(t, within, "the worker's workflow span in the request's trace", inTrace("outflow-worker", "RunWorkflow:"))
	charge := rcv.find(t, within, "the worker's charge activity span in the request's trace", inTrace("outflow-worker", "RunActivity:ChargePayment"))
	rcv.find(t, within, "the charge's request to the provider, a child of the activity's span", func(s receivedSpan) bool {
		return s.service == "outflow-worker" && string(s.span.GetTraceId()) == traceID &&
			s.span.GetKind() == tracepb.Span_SPAN_KIND_CLIENT && string(s.span.GetParentSpanId()) == string(charge.span.GetSpanId()) &&
			strings.Contains(spanAttr(s.span, "url.full"), "/v1/payment_intents")
	})
	// Personal data stays out of the trace, as out of the histories: no
	// span (name, attributes, events, links, status) of any service carries
	// the customer's email or the order's lines.
	require.Empty(t, rcv.carrying(email, "SKU-1"), "spans carrying the customer's personal data")
}

// carrying lists the received spans whose text (name, attributes, events,
// links, status) contains one of needles.
func (r *otlpReceiver) carrying(needles ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.spans {
		text := prototext.Format(s.span)
		for _, n := range needles {
			if strings.Contains(text, n) {
				out = append(out, fmt.Sprintf("%s %q carries %q", s.service, s.span.GetName(), n))
			}
		}
	}
	return out
}

// TestTheSagaAcrossTheInventoryIsOneTrace: with the inventory service in
// the saga, its reservation is part of the order's trace: the worker's call
// to the inventory carries the span (the worker's transport), the
// inventory's outbox event keeps it, and the inventory's relay publishes
// the answer to the saga as a signal in the request's trace, through
// Temporal's propagation on the inventory's own client.
func TestTheSagaAcrossTheInventoryIsOneTrace(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := NewStack(t)
	inv, _ := setInventoryStack(t, s)
	rcv := startOTLPReceiver(t)
	otel := []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + rcv.addr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_TRACES_SAMPLER=always_on",
	}
	s.OrderAPIEnv, s.RelayEnv = otel, otel
	s.WorkerEnv = append(s.WorkerEnv, otel...)
	s.InventoryEnv = append(s.InventoryEnv, otel...)
	for _, p := range []string{"inventory", "orderapi", "starter", "worker"} {
		s.Start(p, "")
	}
	inv.setStock(ctx, t, "SKU-1", 2)

	order, err := s.API().Create(ctx, "trace-inv-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, order.OrderID, "confirmed", 2*time.Minute))

	const within = 30 * time.Second
	req := rcv.find(t, within, "the order API's POST /orders server span", func(s receivedSpan) bool {
		return s.service == "outflow-orderapi" && s.span.GetKind() == tracepb.Span_SPAN_KIND_SERVER &&
			spanAttr(s.span, "http.request.method") == "POST"
	})
	traceID := string(req.span.GetTraceId())
	inTrace := func(service, prefix string) func(receivedSpan) bool {
		return func(s receivedSpan) bool {
			return s.service == service && string(s.span.GetTraceId()) == traceID && strings.HasPrefix(s.span.GetName(), prefix)
		}
	}
	pub := rcv.find(t, within, "the inventory relay's publish of StockReserved in the request's trace",
		inTrace("outflow-inventory", "outbox publish StockReserved"))
	rcv.find(t, within, "the inventory's signal to the saga, a child of that publish", func(s receivedSpan) bool {
		return inTrace("outflow-inventory", "SignalWorkflow:")(s) && string(s.span.GetParentSpanId()) == string(pub.span.GetSpanId())
	})
}

// TestTheJetStreamHopKeepsTheTrace: with the JetStream sink beside
// Temporal, the relay's publish to the stream carries the request's trace
// in the message's headers, and the consumer (cmd/orderfeed) applies the
// event in a span of that trace, a child of the publish.
func TestTheJetStreamHopKeepsTheTrace(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := NewStack(t)
	rcv := startOTLPReceiver(t)
	otel := []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + rcv.addr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_TRACES_SAMPLER=always_on",
	}
	s.OrderAPIEnv, s.RelayEnv, s.WorkerEnv, s.FeedEnv = otel, otel, otel, otel
	s.UseJetStream(JetStreamURLDefault)
	for _, p := range []string{"orderapi", "starter", "worker", "orderfeed"} {
		s.Start(p, "")
	}
	order, err := s.API().Create(ctx, "trace-js-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, order.OrderID, "confirmed", 2*time.Minute))

	const within = 30 * time.Second
	req := rcv.find(t, within, "the order API's POST /orders server span", func(s receivedSpan) bool {
		return s.service == "outflow-orderapi" && s.span.GetKind() == tracepb.Span_SPAN_KIND_SERVER &&
			spanAttr(s.span, "http.request.method") == "POST"
	})
	traceID := string(req.span.GetTraceId())
	apply := rcv.find(t, within, "the consumer's apply of OrderCreated in the request's trace", func(s receivedSpan) bool {
		return s.service == "outflow-orderfeed" && string(s.span.GetTraceId()) == traceID &&
			strings.HasPrefix(s.span.GetName(), "inbox apply OrderCreated")
	})
	rcv.find(t, within, "the relay's publish that the apply continues", func(s receivedSpan) bool {
		return s.service == "outflow-starter" && string(s.span.GetSpanId()) == string(apply.span.GetParentSpanId()) &&
			strings.HasPrefix(s.span.GetName(), "outbox publish OrderCreated")
	})
}
