package temporalpub_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testlog"
	"github.com/outflow/outflow/outbox/temporalpub"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
)

func quietLogger() *slog.Logger { return testlog.Logger() }

// taskQueue returns a task queue no other test uses.
func taskQueue(t *testing.T) string {
	return "test-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
}

// runRelay runs r until the test ends.
func runRelay(t *testing.T, r *outbox.Relay) {
	t.Helper()
	outboxtest.Run(t, r)
}

func enqueueErr(pool *pgxpool.Pool, events ...outbox.Event) ([]outbox.Event, error) {
	var out []outbox.Event
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		var err error
		out, err = outbox.Enqueue(context.Background(), tx, events...)
		return err
	})
	return out, err
}

func orderCreated(t *testing.T, orderID string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent(orderAggregate, orderID, eventOrderCreated, 1, orderCreatedPayload{
		OrderID: orderID, CustomerEmail: "ada@example.com", Currency: "usd", PaymentMethod: "pm_card_visa",
		Amount: 2500, Items: []orderItem{{SKU: "SKU-1", Quantity: 2, UnitAmount: 1250}},
	})
	require.NoError(t, err)
	return e
}

func orderCancelled(t *testing.T, orderID string, created uuid.UUID) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent(orderAggregate, orderID, eventOrderCancelled, 1,
		orderCancelledPayload{OrderID: orderID, CreatedEventID: created.String(), Reason: "test"})
	require.NoError(t, err)
	return e
}

// allPublished reports whether every event is marked; safe inside Eventually.
func allPublished(pool *pgxpool.Pool, events []outbox.Event) bool {
	ids := make([]uuid.UUID, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	var n int
	err := pool.QueryRow(context.Background(),
		`SELECT count(*) FROM outbox_events WHERE event_id = ANY($1) AND published_at IS NOT NULL`, ids).Scan(&n)
	return err == nil && n == len(ids)
}

// describe returns the workflow whose ID is the event's.
func describe(t *testing.T, id uuid.UUID) *workflowpb.WorkflowExecutionInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	desc, err := temporal.Client().DescribeWorkflow(ctx, id.String(), "")
	require.NoError(t, err, "workflow for event %s", id)
	return desc.RawResponse.GetWorkflowExecutionInfo()
}

// userMetadata is the summary and details the workflow of the event was
// started with, as the Temporal UI shows them.
func userMetadata(t *testing.T, c client.Client, id uuid.UUID) (summary, details string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	desc, err := c.DescribeWorkflow(ctx, id.String(), "")
	require.NoError(t, err, "workflow for event %s", id)
	summary, err = desc.GetStaticSummary()
	require.NoError(t, err)
	details, err = desc.GetStaticDetails()
	require.NoError(t, err)
	return summary, details
}

func memoValue[T any](t *testing.T, info *workflowpb.WorkflowExecutionInfo, key string) T {
	t.Helper()
	var v T
	p := info.GetMemo().GetFields()[key]
	require.NotNil(t, p, "memo %s", key)
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &v))
	return v
}

func searchAttribute(t *testing.T, info *workflowpb.WorkflowExecutionInfo, key string) string {
	t.Helper()
	var v string
	p := info.GetSearchAttributes().GetIndexedFields()[key]
	require.NotNil(t, p, "search attribute %s", key)
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &v))
	return v
}

// recorder wraps a publisher and records every acknowledged publish in the
// order the acknowledgements happened, across relays.
type recorder struct {
	mu    sync.Mutex
	acks  []ack
	calls int
}

type ack struct {
	owner string
	event outbox.Event
}

func (r *recorder) wrap(owner string, next outbox.Publisher) outbox.Publisher {
	return outbox.PublisherFunc(func(ctx context.Context, e outbox.Event) error {
		err := next.Publish(ctx, e)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls++
		if err == nil {
			r.acks = append(r.acks, ack{owner: owner, event: e})
		}
		return err
	})
}

// countOn waits until Temporal's visibility counts exactly want workflows on
// task queue tq: one per event, no duplicate run.
func countOn(t *testing.T, tq string, want int) {
	t.Helper()
	var got int64
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := temporal.Client().CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Query: fmt.Sprintf("TaskQueue = %q", tq),
		})
		got = resp.GetCount()
		return err == nil && got == int64(want)
	}, 30*time.Second, 100*time.Millisecond, "workflows on %s: want %d, last count %d", tq, want, got)
}

// newPublisher is temporalpub.New for tests, over c, a client of the
// "default" namespace (or nil): outflow's routes unless cfg names others.
func newPublisher(t testing.TB, c client.Client, cfg temporalpub.Config) *temporalpub.Publisher {
	t.Helper()
	if cfg.Routes == nil {
		cfg.Routes = orderRoutes()
	}
	p, err := temporalpub.New(c, client.Options{}, cfg)
	require.NoError(t, err)
	return p
}
