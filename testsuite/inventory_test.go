package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	// The order app's tables in testdb's template (it migrates the sets
	// the binary registers).
	_ "github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/workflows"
)

// inventoryClient talks to the inventory binary's HTTP API.
type inventoryClient struct{ base string }

func (c inventoryClient) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

type stockLevels struct {
	Available int64 `json:"available"`
	Reserved  int64 `json:"reserved"`
}

func (c inventoryClient) stock(ctx context.Context, t *testing.T, sku string) stockLevels {
	t.Helper()
	code, b, err := c.do(ctx, http.MethodGet, "/stock/"+sku, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "%s", b)
	var st stockLevels
	require.NoError(t, json.Unmarshal(b, &st))
	return st
}

// setStock sets what is available of sku.
func (c inventoryClient) setStock(ctx context.Context, t *testing.T, sku string, available int) {
	t.Helper()
	code, b, err := c.do(ctx, http.MethodPut, "/stock/"+sku, map[string]int{"available": available})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "%s", b)
}

// startInventoryStack starts the inventory service (cmd/inventory, with
// invFailpoints, "" for none) on a scratch database of its own, relaying its
// answers as signals to s's sagas, then s's order API, starter and worker,
// the worker with INVENTORY_URL. It returns a client of the inventory and
// its database's URL. The stack's processes run without a payload codec:
// the inventory's Temporal client has none, so both sides read the signals.
func startInventoryStack(t *testing.T, s *Stack, invFailpoints string) (inventoryClient, string) {
	t.Helper()
	inv, invURL := setInventoryStack(t, s)
	s.Start("inventory", invFailpoints)
	s.Start("orderapi", "")
	s.Start("starter", "")
	s.Start("worker", "")
	return inv, invURL
}

// setInventoryStack is startInventoryStack's settings without the start: a
// test changes them, then starts the processes itself.
func setInventoryStack(t *testing.T, s *Stack) (inventoryClient, string) {
	t.Helper()
	s.CodecKeys = ""
	port, err := ports.Free()
	require.NoError(t, err)
	invAddr := fmt.Sprintf("127.0.0.1:%d", port)
	invURL := testdb.NewEmptyURL(t)
	s.InventoryEnv = []string{
		"INVENTORY_DATABASE_URL=" + invURL,
		"INVENTORY_ADDR=" + invAddr,
		"INVENTORY_SAGA_TASK_QUEUE=" + s.TaskQueue,
		"INVENTORY_CLOSED_WORKFLOW=" + workflows.InventoryLateEventWorkflowName,
		"METRICS_ADDR=",
	}
	s.WorkerEnv = []string{"INVENTORY_URL=http://" + invAddr, "INVENTORY_ANSWER_TIMEOUT=1m"}
	return inventoryClient{base: "http://" + invAddr}, invURL
}

// reservation is the order's reservation status ("" when it has none).
func (c inventoryClient) reservation(ctx context.Context, t *testing.T, orderID string) string {
	t.Helper()
	code, b, err := c.do(ctx, http.MethodGet, "/reservations/"+orderID, nil)
	require.NoError(t, err)
	if code == http.StatusNotFound {
		return ""
	}
	require.Equal(t, http.StatusOK, code, "%s", b)
	var v struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(b, &v))
	return v.Status
}

// TestSagaSpansTheInventory runs the real binaries: the order API, the
// starter, the worker with INVENTORY_URL, and the inventory service on its
// own scratch database, relaying its answers as signals to the sagas. An
// order in stock is reserved then charged; one out of stock fails with no
// charge and nothing reserved; a declined card gives its stock back; a
// cancel refunds and releases.
func TestSagaSpansTheInventory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := NewStack(t)
	inv, invURL := startInventoryStack(t, s, "")
	api := s.API()
	sim := s.Env.SimClient()

	// Every test order is two of SKU-1: room for one.
	inv.setStock(ctx, t, "SKU-1", 2)

	held, err := api.Create(ctx, "inv-held-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, held.OrderID, "confirmed", 2*time.Minute))
	require.Equal(t, "reserved", inv.reservation(ctx, t, held.OrderID))
	require.Equal(t, stockLevels{Available: 0, Reserved: 2}, inv.stock(ctx, t, "SKU-1"))

	short, err := api.Create(ctx, "inv-short-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, short.OrderID, "payment_failed", 2*time.Minute))
	require.Equal(t, "", inv.reservation(ctx, t, short.OrderID), "a rejection reserves nothing")
	ledger, err := sim.Ledger(ctx)
	require.NoError(t, err)
	for _, c := range ledger.PaymentIntents {
		require.NotEqual(t, short.OrderID, c.Metadata[activities.MetadataOrderID], "the out-of-stock order reached the payment provider")
	}

	require.NoError(t, api.Cancel(ctx, held.OrderID))
	require.NoError(t, WaitStatus(ctx, s, held.OrderID, "cancelled", 2*time.Minute))
	require.Eventually(t, func() bool { return inv.reservation(ctx, t, held.OrderID) == "released" }, time.Minute, 200*time.Millisecond,
		"the cancel releases the reservation")
	require.Equal(t, stockLevels{Available: 2, Reserved: 0}, inv.stock(ctx, t, "SKU-1"))

	declined, err := api.Create(ctx, "inv-declined-"+uuid.NewString(), "pm_card_chargeDeclined")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, declined.OrderID, "payment_failed", 2*time.Minute))
	require.Eventually(t, func() bool { return inv.reservation(ctx, t, declined.OrderID) == "released" }, time.Minute, 200*time.Millisecond,
		"a declined charge gives its stock back")
	require.Equal(t, stockLevels{Available: 2, Reserved: 0}, inv.stock(ctx, t, "SKU-1"))

	// Every inventory event reached a saga, or, for one that had closed
	// (the releases' StockReleased), InventoryLateEventWorkflow: none is
	// left for an operator.
	invDB := testdb.Open(t, invURL)
	events := outboxtest.WaitFor(t, invDB, outboxtest.Match{}, time.Minute, func(es []outboxtest.Event) bool {
		for _, e := range es {
			if e.PublishedAt == nil && e.SkippedAt == nil && e.QuarantinedAt == nil {
				return false
			}
		}
		return true
	}, "the inventory's relay delivered every event")
	require.Len(t, events, 5, "two StockReserved, a StockRejected, two StockReleased")
	for _, e := range events {
		require.Nil(t, e.QuarantinedAt, "event %s (%s) quarantined: %s", e.ID, e.Type, e.LastError)
	}
	rep, err := CheckInventory(ctx, invDB, s.Pool, map[string]int64{"SKU-1": 2})
	require.NoError(t, err, "the invariants on the inventory's database")
	require.Equal(t, InventoryReport{Events: 5, Reservations: 2, Released: 2}, rep, "the rejection wrote no reservation")
}

// TestInventoryEventsAfterTheSagaWasForgotten runs the real binaries: the
// inventory's relay cannot reach Temporal while an order's saga reserves,
// waits for the answer in vain, releases and fails the order; Temporal then
// forgets the saga (the namespace retention; the test deletes the closed
// run as it does), and only then does the relay deliver the StockReserved
// and StockReleased. Neither starts a saga under the saga's ID (a run from
// an empty input would fail at once, and its event would count as
// delivered): each starts an InventoryLateEventWorkflow of its own, as for
// a saga closed within the retention. The late StockReserved leaves nothing
// held: the saga released the reservation as it gave up.
func TestInventoryEventsAfterTheSagaWasForgotten(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := NewStack(t)
	inv, invURL := setInventoryStack(t, s)
	unreachable, err := ports.Free()
	require.NoError(t, err)
	base := s.InventoryEnv
	s.InventoryEnv = append(slices.Clone(base), fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", unreachable))
	s.WorkerEnv = append(s.WorkerEnv, "INVENTORY_ANSWER_TIMEOUT=10s")
	s.Start("inventory", "")
	s.Start("orderapi", "")
	s.Start("starter", "")
	s.Start("worker", "")
	inv.setStock(ctx, t, "SKU-1", 2)

	order, err := s.API().Create(ctx, "inv-forgotten-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, order.OrderID, "payment_failed", 2*time.Minute), "no answer in time: the saga gives up")
	waitCompleted(ctx, t, s.Env, order.EventID)
	require.Equal(t, "released", inv.reservation(ctx, t, order.OrderID), "the saga reserved, then released as it gave up")
	invDB := testdb.Open(t, invURL)
	held := outboxtest.Events(t, invDB, outboxtest.Match{AggregateID: order.OrderID})
	require.Len(t, held, 2, "a StockReserved and a StockReleased")
	require.Equal(t, []string{"StockReserved", "StockReleased"}, []string{held[0].Type, held[1].Type})
	for _, e := range held {
		require.Nil(t, e.PublishedAt, "event %s (%s) reached Temporal, which the relay cannot reach", e.ID, e.Type)
	}

	forgetWorkflow(ctx, t, s.Env, order.EventID)
	s.Proc("inventory").Stop(10 * time.Second)
	s.InventoryEnv = base
	s.Start("inventory", "")

	events := outboxtest.WaitFor(t, invDB, outboxtest.Match{AggregateID: order.OrderID}, 2*time.Minute, func(es []outboxtest.Event) bool {
		for _, e := range es {
			if e.PublishedAt == nil && e.QuarantinedAt == nil {
				return false
			}
		}
		return true
	}, "the inventory's relay delivers both late events")
	for _, e := range events {
		require.Nil(t, e.QuarantinedAt, "event %s (%s) quarantined: %s", e.ID, e.Type, e.LastError)
	}
	_, err = s.Env.Client.DescribeWorkflow(ctx, order.EventID, "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "no saga run under the forgotten saga's ID (a late event must not start one from an empty input)")
	for _, e := range events {
		waitCompleted(ctx, t, s.Env, e.ID.String())
		d, err := s.Env.Client.DescribeWorkflow(ctx, e.ID.String(), "")
		require.NoError(t, err)
		require.Equal(t, workflows.InventoryLateEventWorkflowName, d.RawResponse.GetWorkflowExecutionInfo().GetType().GetName(), "event %s (%s)", e.ID, e.Type)
	}
	require.Equal(t, "released", inv.reservation(ctx, t, order.OrderID))
	require.Equal(t, stockLevels{Available: 2, Reserved: 0}, inv.stock(ctx, t, "SKU-1"), "nothing held for the failed order")
	rep, err := CheckInventory(ctx, invDB, s.Pool, map[string]int64{"SKU-1": 2})
	require.NoError(t, err, "the invariants on the inventory's database")
	require.Equal(t, InventoryReport{Events: 2, Reservations: 1, Released: 1}, rep)
}
