package workflows

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/providersim"
)

// wireInventory answers the inventory's HTTP API as cmd/inventory does for
// an order in stock, and signals the saga its StockReserved event before it
// answers (the relay is often faster than the answer), as its relay would.
type wireInventory struct {
	c        client.Client
	mu       sync.Mutex
	requests []string // "POST /reservations key"
}

func (f *wireInventory) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		OrderID    string `json:"order_id"`
		WorkflowID string `json:"workflow_id"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path+" "+r.Header.Get("Idempotency-Key"))
	f.mu.Unlock()
	outcome := activities.InventoryReserved
	if strings.HasSuffix(r.URL.Path, "/release") {
		outcome = activities.InventoryReleased
		body.OrderID = strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/reservations/"), "/release")
	} else {
		payload, _ := json.Marshal(map[string]any{"order_id": body.OrderID, "workflow_id": body.WorkflowID, "outcome": outcome,
			"items": []map[string]any{{"sku": "SKU-1", "quantity": 2}}, "idempotency_key": r.Header.Get("Idempotency-Key")})
		ev := handoff.EventInput{EventID: uuid.NewString(), EventType: activities.InventoryEventReserved, AggregateType: "inventory_reservation",
			AggregateID: body.OrderID, Sequence: 1, SchemaVersion: 1, OccurredAt: time.Now().UTC(), Payload: payload}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if err := f.c.SignalWorkflow(ctx, body.WorkflowID, "", activities.InventorySignal, ev); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"order_id": body.OrderID, "workflow_id": body.WorkflowID, "outcome": outcome,
		"items": []map[string]any{}, "idempotency_key": r.Header.Get("Idempotency-Key")})
}

// The saga's stock step on a real dev server and a real worker whose
// inventory (INVENTORY_URL) answers over HTTP and by signal: reserved, then
// charged and confirmed; then a cancel refunds and releases. The histories
// are saved (OUTFLOW_RECORD_HISTORIES) for TestReplayHistories, which then
// proves every later change keeps runs with the step replaying.
func TestSagaWithInventoryOnDevServer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	srv := devserver.Start(t, devserver.Options{})
	c := srv.Client()
	inv := &wireInventory{c: c}
	invSrv := httptest.NewServer(inv)
	t.Cleanup(invSrv.Close)

	pool, _ := testdb.New(t)
	sim := providersim.New(providersim.Options{})
	base, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	acts, err := activities.New(activities.Config{StripeAPIBase: base, EmailAPIBase: base, HTTPTimeout: 2 * time.Second,
		InventoryURL: invSrv.URL, InventoryAnswerTimeout: time.Minute})
	require.NoError(t, err)
	acts.DB, acts.Temporal = pool, c
	acts.Metrics = mustMetrics(t)
	acts.Failpoints, err = failpoints.Parse("")
	require.NoError(t, err)
	tq := "saga-inventory-" + uuid.NewString()
	w := worker.New(c, tq, worker.Options{})
	Register(w)
	w.RegisterActivity(acts)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	s := &stack{c: c, sim: sim, pool: pool, tq: tq}

	o := s.newOrder(t)
	var res handoff.SagaResult
	require.NoError(t, s.start(t, handoff.OrderCreatedWorkflowName, o.createdInput(t, "pm_card_visa")).Get(ctxFor(t), &res))
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.True(t, res.StockReserved)
	var cres CancelResult
	require.NoError(t, s.start(t, handoff.OrderCancelledWorkflowName, o.cancelledInput(t)).Get(ctxFor(t), &cres))
	require.True(t, cres.Refunded)
	require.True(t, cres.StockReleased)

	require.Equal(t, []string{
		"POST /reservations " + activities.ReserveKey(o.created),
		"POST /reservations/" + o.id + "/release " + activities.ReleaseKey(o.created),
	}, inv.requests)
	st, _, refund := s.status(t, o.id)
	require.Equal(t, "cancelled", st)
	require.NotNil(t, refund)
	s.record(t, o.created, "order_created_inventory_reserved.json")
	s.record(t, o.cancelled, "order_cancelled_refunded_released.json")
}
