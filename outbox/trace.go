package outbox

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Tracing. An event carries the trace of the request that wrote it: Enqueue
// records the caller's trace context (W3C traceparent and tracestate, and
// baggage when present, through the propagator) in the event's row, in the
// same transaction, and every relay source reads it back into
// Event.TraceContext. The relay's publish is a span of that trace (see
// startPublishSpan), and a publisher hands the span on downstream: the
// Temporal publisher through Temporal's own headers (the tracing interceptor
// of go.temporal.io/sdk/contrib/opentelemetry on the client), the JetStream
// publisher in the message's headers. The package never reads the
// environment: the propagator and the tracer provider are the caller's
// (EnqueueConfig.Propagator, RelayConfig.TracerProvider and
// RelayConfig.Propagator) or otel's globals, which a main sets.

// tracerName is the instrumentation scope of the relay's spans.
const tracerName = "github.com/outflow/outflow/outbox"

// Span attributes of the relay's publish.
const (
	AttrEventID       = "outflow.event.id"
	AttrEventType     = "outflow.event.type"
	AttrAggregateType = "outflow.aggregate.type"
	AttrAggregateID   = "outflow.aggregate.id"
	AttrSequence      = "outflow.event.sequence"
	AttrAttempt       = "outflow.publish.attempt"
	AttrReplay        = "outflow.publish.replay"
	AttrSkipped       = "outflow.publish.skipped"
)

// CaptureTraceContext returns the trace context of ctx as propagator
// headers (traceparent, tracestate, baggage), through prop or otel's global
// propagator when prop is nil, for Event.TraceContext. It returns nil, at
// the cost of one context lookup, when ctx has no valid span: tracing off
// writes nothing. [Enqueue] calls it for events that have none; a caller of
// [EnqueueBatch], which has no context, sets Event.TraceContext with it.
func CaptureTraceContext(ctx context.Context, prop propagation.TextMapPropagator) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	if prop == nil {
		prop = otel.GetTextMapPropagator()
	}
	c := propagation.MapCarrier{}
	prop.Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	return c
}

// captureTraces fills the TraceContext of events that have none with ctx's.
func captureTraces(ctx context.Context, prop propagation.TextMapPropagator, events []Event) []Event {
	var tc map[string]string
	copied := false
	for i := range events {
		if events[i].TraceContext != nil {
			continue
		}
		if tc == nil {
			if tc = CaptureTraceContext(ctx, prop); tc == nil {
				return events
			}
		}
		if !copied { // the caller's slice is not ours to change
			events, copied = append([]Event(nil), events...), true
		}
		events[i].TraceContext = tc
	}
	return events
}

// traceContextsArg is the events' trace contexts as the enqueue statement's
// jsonb[] argument: empty (no work, NULL columns) when none has one.
func traceContextsArg(events []Event, idx []int) ([]*string, error) {
	var out []*string
	for j, i := range idx {
		tc := events[i].TraceContext
		if len(tc) == 0 {
			continue
		}
		if out == nil {
			out = make([]*string, len(idx))
		}
		b, err := json.Marshal(tc)
		if err != nil {
			return nil, err
		}
		s := string(b)
		out[j] = &s
	}
	if out == nil {
		out = []*string{}
	}
	return out, nil
}

// startPublishSpan starts the relay's span for publishing e, its attempt
// (counting this one), from ctx, the relay's own context; the publisher
// gets the context it returns, and hands the span on downstream.
//
// A first delivery, and a redelivery after a crash or a lost lease (the
// same delivery, tried again), is a child of the span that enqueued e
// (Event.TraceContext): the request and everything it caused are one
// trace, whatever the number of attempts.
//
// An operator's replay (Event.Replay) starts a new trace, linked to the
// enqueuing span. A replay may come months after the write, for reasons of
// the operator's own; made a child, it would extend a trace long closed
// (whose backend may have dropped it, and whose duration and critical path
// would then measure the operator's delay instead of the request), and
// each replay would pile into it. The link keeps the way back to the
// original request.
func startPublishSpan(ctx context.Context, cfg *RelayConfig, e Event, attempt int) (context.Context, trace.Span) {
	tp, prop := cfg.TracerProvider, cfg.Propagator
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if prop == nil {
		prop = otel.GetTextMapPropagator()
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer)}
	if len(e.TraceContext) > 0 {
		ctx = prop.Extract(ctx, propagation.MapCarrier(e.TraceContext))
		if e.Replay {
			if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc,
					Attributes: []attribute.KeyValue{attribute.String("outflow.link", "enqueued")}}))
			}
			opts = append(opts, trace.WithNewRoot())
		}
	}
	ctx, span := tp.Tracer(tracerName).Start(ctx, "outbox publish "+e.Type, opts...)
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String(AttrEventID, e.ID.String()),
			attribute.String(AttrEventType, e.Type),
			attribute.String(AttrAggregateType, e.AggregateType),
			attribute.String(AttrAggregateID, e.AggregateID),
			attribute.Int64(AttrSequence, e.Sequence),
			attribute.Int(AttrAttempt, attempt),
			attribute.Bool(AttrReplay, e.Replay),
		)
		if e.Skipped {
			span.SetAttributes(attribute.Bool(AttrSkipped, true))
		}
	}
	return ctx, span
}

// endPublishSpan ends span with the publish's outcome.
func endPublishSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
