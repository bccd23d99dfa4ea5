package natsconsumer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/outflow/outflow/outbox/natspub/natsconsumer"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestTraceGoesFromThePublishToTheApply: natspub writes the relay's
// publish span into the message's headers (W3C traceparent, through otel's
// global propagator), and the consumer applies the event inside that
// trace; an event published outside any span carries no traceparent.
func TestTraceGoesFromThePublishToTheApply(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{}) // as a main's telemetry setup does
	pool, _ := testdb.New(t)
	js := connect(t)
	stream, prefix := testStream(t, js, time.Minute)
	pub := publisher(t, js, stream, prefix)
	ctx := context.Background()
	order := uuid.NewString()
	traced, untraced := orderEvent(order, 1, "OrderCreated"), orderEvent(order, 2, "OrderCancelled")

	spanCtx, span := sdktrace.NewTracerProvider().Tracer("test").Start(ctx, "outbox publish")
	require.NoError(t, pub.Publish(spanCtx, traced))
	span.End()
	require.NoError(t, pub.Publish(ctx, untraced))
	s, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	m1, err := s.GetMsg(ctx, 1)
	require.NoError(t, err)
	require.Contains(t, m1.Header.Get("Traceparent"), span.SpanContext().TraceID().String(), "the publish span is in the headers")
	m2, err := s.GetMsg(ctx, 2)
	require.NoError(t, err)
	require.Empty(t, m2.Header.Get("Traceparent"), "no span, no traceparent")

	p := newProjection(t, pool)
	ib, _ := newInbox(t)
	var mu sync.Mutex
	seen := map[uuid.UUID]trace.SpanContext{}
	c, err := natsconsumer.New(ctx, js, pool, natsconsumer.Config{Name: "traced", Stream: stream, Inbox: ib, Positions: p,
		FetchWait: 200 * time.Millisecond, RetryDelay: 100 * time.Millisecond,
		Apply: func(ctx context.Context, tx pgx.Tx, m natsconsumer.Message) error {
			mu.Lock()
			seen[m.EventID] = trace.SpanContextFromContext(ctx)
			mu.Unlock()
			return p.apply(ctx, tx, m)
		}})
	require.NoError(t, err)
	run(t, c)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 2 }, 30*time.Second, 50*time.Millisecond)
	require.Equal(t, span.SpanContext().TraceID(), seen[traced.ID].TraceID(), "the apply continues the publish's trace")
	require.False(t, seen[untraced.ID].IsValid(), "an untraced message is applied outside any trace")
}
