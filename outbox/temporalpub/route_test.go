package temporalpub_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// TestRoutesWithoutSearchAttributesOnANamespaceWithoutOrderId: a team's
// namespace that never registered OrderId. A start carrying OrderId is
// refused there; the publisher, given routes that ask for no search
// attribute, starts every event's workflow in it: on the route's own task
// queue where it names one, on Config.TaskQueue otherwise, with the memo
// and delivery kind as for any start. The publisher's namespace is the
// client's (from the options it was dialled with), not "default": it reads
// that namespace's retention.
func TestRoutesWithoutSearchAttributesOnANamespaceWithoutOrderId(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const retention = 72 * time.Hour
	defaultRetention, err := temporalpub.NamespaceRetention(ctx, temporal.Client(), client.DefaultNamespace)
	require.NoError(t, err)
	require.NotEqual(t, defaultRetention, retention, "the retentions tell the namespaces apart")

	ns := "billing-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	require.NoError(t, temporal.RegisterNamespace(ctx, ns, retention))
	opts := temporal.ClientOptions(ns)
	c, err := client.Dial(opts)
	require.NoError(t, err)
	defer c.Close()
	attrs, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	require.NoError(t, err)
	require.NotContains(t, attrs.GetCustomAttributes(), searchAttributeOrderID)

	// What the publisher used to send with every start: refused here.
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: uuid.NewString(), TaskQueue: taskQueue(t),
		TypedSearchAttributes: sdktemporal.NewSearchAttributes(orderIDKey.ValueSet("o-1")),
	}, "InvoiceWorkflow")
	var invalid *serviceerror.InvalidArgument
	require.ErrorAs(t, err, &invalid, "a start with OrderId on a namespace without it")

	pool, _ := testdb.New(t)
	tq, voids := taskQueue(t), taskQueue(t)
	pub, err := temporalpub.New(c, opts, temporalpub.Config{TaskQueue: tq, Routes: temporalpub.Routes{
		"InvoiceIssued": {Workflow: "InvoiceWorkflow"},
		"InvoiceVoided": {Workflow: "VoidInvoiceWorkflow", TaskQueue: voids},
	}})
	require.NoError(t, err)
	require.Equal(t, ns, pub.Namespace())
	got, err := pub.Retention(ctx)
	require.NoError(t, err)
	require.Equal(t, retention, got, "the retention of the client's namespace")

	var events []outbox.Event
	for i := range 3 {
		id := "inv-" + uuid.NewString()[:8]
		issued, err := outbox.NewEvent("invoice", id, "InvoiceIssued", 1, map[string]any{"invoice_id": id, "amount": 100 * (i + 1)})
		require.NoError(t, err)
		voided, err := outbox.NewEvent("invoice", id, "InvoiceVoided", 1, map[string]any{"invoice_id": id})
		require.NoError(t, err)
		events = append(events, testdb.Enqueue(t, pool, issued, voided)...)
	}
	r, err := outbox.NewRelay(pool, pub, outbox.RelayConfig{Logger: quietLogger(), PollInterval: 100 * time.Millisecond, MaxAttempts: 1})
	require.NoError(t, err)
	runRelay(t, r)
	require.Eventually(t, func() bool { return allPublished(pool, events) }, 30*time.Second, 20*time.Millisecond)

	dc := converter.GetDefaultDataConverter()
	for _, e := range events {
		desc, err := c.DescribeWorkflow(ctx, e.ID.String(), "")
		require.NoError(t, err, "workflow of %s in namespace %s", e.ID, ns)
		info := desc.RawResponse.GetWorkflowExecutionInfo()
		wantType, wantQueue := "InvoiceWorkflow", tq
		if e.Type == "InvoiceVoided" {
			wantType, wantQueue = "VoidInvoiceWorkflow", voids
		}
		require.Equal(t, wantType, info.GetType().GetName())
		require.Equal(t, wantQueue, info.GetTaskQueue())
		require.NotContains(t, info.GetSearchAttributes().GetIndexedFields(), searchAttributeOrderID)
		var aggregateType, delivery string
		require.NoError(t, dc.FromPayload(info.GetMemo().GetFields()["aggregate_type"], &aggregateType))
		require.NoError(t, dc.FromPayload(info.GetMemo().GetFields()["delivery"], &delivery))
		require.Equal(t, "invoice", aggregateType)
		require.Equal(t, temporalpub.DeliveryFirst, delivery)
		summary, details := userMetadata(t, c, e.ID)
		require.Equal(t, e.Type+" invoice "+e.AggregateID, summary, "a route without Describe: the default summary")
		require.Empty(t, details)
	}
}

// TestRouteSearchAttributes: a route's SearchAttributes function decides
// what a start carries, here an attribute of the event's own payload
// registered on the default namespace for the test; a route without one
// carries none, not even OrderId, although the namespace has it.
func TestRouteSearchAttributes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	attr := "Sku" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	_, err := temporal.Client().OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: client.DefaultNamespace, SearchAttributes: map[string]enumspb.IndexedValueType{attr: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	})
	require.NoError(t, err)
	key := sdktemporal.NewSearchAttributeKeyKeyword(attr)
	tq := taskQueue(t)
	pub := newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: tq, Routes: temporalpub.Routes{
		"StockCounted": {Workflow: "StockWorkflow", SearchAttributes: func(e outbox.Event) sdktemporal.SearchAttributes {
			return sdktemporal.NewSearchAttributes(key.ValueSet("sku-" + e.AggregateID))
		}},
		"StockMoved": {Workflow: "StockWorkflow"},
	}})
	counted, err := outbox.NewEvent("stock", "s-1", "StockCounted", 1, map[string]int{"count": 3})
	require.NoError(t, err)
	moved, err := outbox.NewEvent("stock", "s-1", "StockMoved", 1, map[string]int{"count": 2})
	require.NoError(t, err)
	counted.ID, moved.ID = uuid.New(), uuid.New()
	require.NoError(t, pub.Publish(ctx, counted))
	require.NoError(t, pub.Publish(ctx, moved))

	require.Equal(t, "sku-s-1", searchAttribute(t, describe(t, counted.ID), attr))
	fields := describe(t, moved.ID).GetSearchAttributes().GetIndexedFields()
	require.NotContains(t, fields, attr)
	require.NotContains(t, fields, searchAttributeOrderID, "the publisher adds no attribute of its own")
}

// TestPublishersShareARegistry: two publishers on one Registerer (two relays
// of one process, say) do not panic: the second reuses the first one's
// counters, which then count the duplicates of both. A collector of another
// kind under one of the names is an error, not a panic.
func TestPublishersShareARegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	tq := taskQueue(t)
	first := newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: tq, Registerer: reg})
	second := newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: tq, Registerer: reg})
	e := orderCreated(t, uuid.NewString())
	e.ID = uuid.New()
	require.NoError(t, first.Publish(ctx, e))
	require.NoError(t, first.Publish(ctx, e), "a duplicate, absorbed")
	require.NoError(t, second.Publish(ctx, e), "a duplicate, absorbed")
	require.Equal(t, 2.0, promtest.Value(t, reg, "outbox_duplicate_starts_total"), "one counter for both publishers")
	countOn(t, tq, 1)

	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_replays_refused_total", Help: "not a counter"}))
	_, err := temporalpub.New(temporal.Client(), client.Options{}, temporalpub.Config{Routes: temporalpub.Routes{"X": {Workflow: "Y"}}, Registerer: clash})
	require.ErrorContains(t, err, "outbox_replays_refused_total")
}

// TestNewFromClient: a caller holding only a client gets a publisher of
// the SDK's default namespace, or of Config.Namespace, which reads that
// namespace's retention; New refuses a Config.Namespace other than its
// options'.
func TestNewFromClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	routes := temporalpub.Routes{"X": {Workflow: "Y"}}
	pub, err := temporalpub.NewFromClient(temporal.Client(), temporalpub.Config{Routes: routes})
	require.NoError(t, err)
	require.Equal(t, client.DefaultNamespace, pub.Namespace())
	ret, err := pub.Retention(ctx)
	require.NoError(t, err)
	require.Positive(t, ret)

	pub, err = temporalpub.NewFromClient(temporal.Client(), temporalpub.Config{Routes: routes, Namespace: "billing"})
	require.NoError(t, err)
	require.Equal(t, "billing", pub.Namespace())

	_, err = temporalpub.New(temporal.Client(), client.Options{Namespace: "orders"}, temporalpub.Config{Routes: routes, Namespace: "billing"})
	require.ErrorContains(t, err, `Config.Namespace "billing" is not the client's namespace "orders"`)
	pub, err = temporalpub.New(temporal.Client(), client.Options{Namespace: "orders"}, temporalpub.Config{Routes: routes})
	require.NoError(t, err)
	require.Equal(t, "orders", pub.Namespace())
}
