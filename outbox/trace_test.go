package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// tracedPublisher records, per delivery, the span context and baggage its
// publisher was called with, and fails each event's first call when told.
type tracedPublisher struct {
	mu        sync.Mutex
	calls     map[uuid.UUID][]trace.SpanContext
	bags      map[uuid.UUID][]baggage.Baggage
	failFirst map[uuid.UUID]bool
}

func (p *tracedPublisher) Publish(ctx context.Context, e outbox.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[e.ID] = append(p.calls[e.ID], trace.SpanContextFromContext(ctx))
	p.bags[e.ID] = append(p.bags[e.ID], baggage.FromContext(ctx))
	if p.failFirst[e.ID] && len(p.calls[e.ID]) == 1 {
		return errors.New("the sink blinked: try again")
	}
	return nil
}

func (p *tracedPublisher) count(id uuid.UUID) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls[id])
}

// TestTraceThroughTheRelay, for each source: Enqueue inside a span stores
// the span's W3C context (and baggage) with the event and nothing without
// one; the relay's publish of a first delivery is a child of the enqueuing
// span, its retry too (same trace, attempt 2), and the publisher is called
// inside the publish span with the baggage; an event written without a
// span gets a publish span with no parent; an operator's replay starts a
// new trace linked to the enqueuing span.
func TestTraceThroughTheRelay(t *testing.T) {
	for _, source := range []string{"poll", "cdc", "log"} {
		t.Run(source, func(t *testing.T) {
			t.Parallel()
			testTraceThroughTheRelay(t, source)
		})
	}
}

func testTraceThroughTheRelay(t *testing.T, source string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, _ := testdb.NewLogical(t)
	_, err := outboxops.SetSource(ctx, pool, source, "trace_test", "trace test")
	require.NoError(t, err)

	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	q := outbox.NewEnqueuer(outbox.EnqueueConfig{Propagator: prop})

	// The request: its span, with baggage, writes one event.
	member, err := baggage.NewMember("tenant", "acme")
	require.NoError(t, err)
	bag, err := baggage.New(member)
	require.NoError(t, err)
	reqCtx, reqSpan := tp.Tracer("test").Start(baggage.ContextWithBaggage(ctx, bag), "POST /orders")
	traced := enqueueCtx(t, reqCtx, pool, q, mustEvent(t, "traced-"+source))
	reqSpan.End()
	req := reqSpan.SpanContext()
	// A write outside any span.
	untraced := enqueueCtx(t, ctx, pool, q, mustEvent(t, "untraced-"+source))

	tc := storedTraceContext(t, pool, traced.ID)
	require.NotNil(t, tc, "the traced event's row has its trace context")
	require.Contains(t, tc["traceparent"], req.TraceID().String())
	require.Contains(t, tc["traceparent"], req.SpanID().String())
	require.Equal(t, "tenant=acme", tc["baggage"])
	require.Nil(t, storedTraceContext(t, pool, untraced.ID), "no span, no trace context: NULL")

	pub := &tracedPublisher{calls: map[uuid.UUID][]trace.SpanContext{}, bags: map[uuid.UUID][]baggage.Baggage{},
		failFirst: map[uuid.UUID]bool{traced.ID: true}}
	r, err := outbox.NewRelay(pool, pub, outbox.RelayConfig{
		Owner: "trace-" + source, Logger: quietLogger(), Lease: 2 * time.Second,
		PollInterval: 50 * time.Millisecond, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		MaxAttempts: 5, MarkDelay: 5 * time.Millisecond,
		TracerProvider: tp, Propagator: prop,
		CDCSlot: "trace_" + strings.ReplaceAll(uuid.NewString()[:8], "-", ""), CDCGrace: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	outboxtest.Run(t, r)
	eventually(t, 30*time.Second, func() bool { return pub.count(traced.ID) == 2 && pub.count(untraced.ID) == 1 },
		"the traced event delivered twice (a retry), the untraced once")

	// First delivery and its retry: children of the request's span.
	first := publishSpans(t, spans, traced.ID, 2)
	for i, s := range first {
		require.Equal(t, req.TraceID(), s.SpanContext().TraceID(), "attempt %d is in the request's trace", i+1)
		require.Equal(t, req.SpanID(), s.Parent().SpanID(), "attempt %d is a child of the enqueuing span", i+1)
		require.Equal(t, trace.SpanKindProducer, s.SpanKind())
		attrs := attrMap(s.Attributes())
		require.Equal(t, traced.ID.String(), attrs[outbox.AttrEventID].AsString())
		require.Equal(t, "order", attrs[outbox.AttrAggregateType].AsString())
		require.Equal(t, traced.AggregateID, attrs[outbox.AttrAggregateID].AsString())
		require.Equal(t, traced.Sequence, attrs[outbox.AttrSequence].AsInt64())
		require.False(t, attrs[outbox.AttrReplay].AsBool())
		require.Empty(t, s.Links())
		pub.mu.Lock()
		require.Equal(t, s.SpanContext(), pub.calls[traced.ID][i], "the publisher runs inside the publish span")
		require.Equal(t, "acme", pub.bags[traced.ID][i].Member("tenant").Value(), "and with the request's baggage")
		pub.mu.Unlock()
	}
	require.EqualValues(t, 1, attrMap(first[0].Attributes())[outbox.AttrAttempt].AsInt64())
	require.EqualValues(t, 2, attrMap(first[1].Attributes())[outbox.AttrAttempt].AsInt64(), "the retry says it is one")

	// No trace context: a root span.
	u := publishSpans(t, spans, untraced.ID, 1)[0]
	require.False(t, u.Parent().IsValid(), "an event written without a span has no parent")
	require.NotEqual(t, req.TraceID(), u.SpanContext().TraceID())

	// The operator's replay: a new trace, linked to the enqueuing span.
	// (The log's retry went through a hold, which the relay releases a
	// moment after the publish, and the poll relay marks the publish in a
	// batch a moment after it: a replay finds the event once both are done.)
	var n int64
	eventually(t, 10*time.Second, func() bool {
		n, err = outboxops.Replay(ctx, pool, outboxops.ReplayOptions{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour),
			AggregateType: "order", AggregateID: traced.AggregateID})
		return err == nil && n == 1
	}, "replay the traced event: %d replayed, %v", stringer(func() string { return fmt.Sprint(n) }), stringer(func() string { return fmt.Sprint(err) }))
	eventually(t, 30*time.Second, func() bool { return pub.count(traced.ID) == 3 }, "the replay delivered")
	rs := publishSpans(t, spans, traced.ID, 3)[2]
	require.True(t, attrMap(rs.Attributes())[outbox.AttrReplay].AsBool())
	require.NotEqual(t, req.TraceID(), rs.SpanContext().TraceID(), "a replay starts a new trace")
	require.False(t, rs.Parent().IsValid(), "a replay is a root")
	require.Len(t, rs.Links(), 1)
	require.Equal(t, req.TraceID(), rs.Links()[0].SpanContext.TraceID(), "linked to the request's trace")
	require.Equal(t, req.SpanID(), rs.Links()[0].SpanContext.SpanID(), "and to the enqueuing span")
}

func mustEvent(t *testing.T, order string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent("order", order, "OrderCreated", 1, map[string]string{"order": order})
	require.NoError(t, err)
	return e
}

// enqueueCtx commits e through q in ctx and returns it as written.
func enqueueCtx(t *testing.T, ctx context.Context, pool *pgxpool.Pool, q *outbox.Enqueuer, e outbox.Event) outbox.Event {
	t.Helper()
	var out []outbox.Event
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		out, err = q.Enqueue(ctx, tx, e)
		return err
	}))
	return out[0]
}

// storedTraceContext is the event's trace_context column, in whichever
// table holds it.
func storedTraceContext(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) map[string]string {
	t.Helper()
	var tc map[string]string
	require.NoError(t, pool.QueryRow(context.Background(), `
		SELECT trace_context FROM outbox_events WHERE event_id = $1
		UNION ALL SELECT trace_context FROM outbox_log WHERE event_id = $1`, id).Scan(&tc))
	return tc
}

// publishSpans are the relay's ended publish spans of the event id, in
// start order; the test fails unless there are n.
func publishSpans(t *testing.T, rec *tracetest.SpanRecorder, id uuid.UUID, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	var out []sdktrace.ReadOnlySpan
	find := func() bool { // a span ends just after its publisher returns
		out = out[:0]
		for _, s := range rec.Ended() {
			if v, ok := attrMap(s.Attributes())[outbox.AttrEventID]; ok && v.AsString() == id.String() {
				out = append(out, s)
			}
		}
		return len(out) >= n
	}
	require.Eventually(t, find, 5*time.Second, 10*time.Millisecond)
	require.Len(t, out, n, "publish spans of %s", id)
	return out
}

func attrMap(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}
