package activities

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
)

// fakeInventory answers like cmd/inventory and records what it was sent.
type fakeInventory struct {
	mu       sync.Mutex
	requests []recordedRequest
	status   int
	body     string
	replayed bool
}

type recordedRequest struct {
	Method, Path, Key, ContentType string
	Body                           map[string]any
}

func (f *fakeInventory) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(data, &body)
	f.mu.Lock()
	f.requests = append(f.requests, recordedRequest{r.Method, r.URL.EscapedPath(), r.Header.Get("Idempotency-Key"), r.Header.Get("Content-Type"), body})
	status, answer, replayed := f.status, f.body, f.replayed
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

func newInventoryActs(t *testing.T, f *fakeInventory) *Activities {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return &Activities{Inventory: &InventoryClient{BaseURL: srv.URL + "/", HTTP: srv.Client()}}
}

const invEvent = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

// The reserve request is the documented one: POST /reservations, the
// order, the saga's workflow ID and the items, under the key derived from
// the OrderCreated event; the answer decodes into the saga's view.
func TestReserveStockSendsTheContract(t *testing.T) {
	t.Parallel()
	f := &fakeInventory{status: http.StatusCreated, body: `{"order_id":"o1","workflow_id":"` + invEvent + `","outcome":"reserved",` +
		`"items":[{"sku":"SKU-1","quantity":2}],"idempotency_key":"outflow:` + invEvent + `:reserve","event_id":"ev1"}`}
	a := newInventoryActs(t, f)

	out, err := a.ReserveStock(context.Background(), ReserveStockInput{EventID: invEvent, OrderID: "o1", WorkflowID: invEvent,
		Items: []InventoryItem{{SKU: "SKU-1", Quantity: 2}}})

	require.NoError(t, err)
	require.Equal(t, InventoryOutcome{OrderID: "o1", WorkflowID: invEvent, Outcome: InventoryReserved,
		Items: []InventoryItem{{SKU: "SKU-1", Quantity: 2}}, IdempotencyKey: ReserveKey(invEvent), EventID: "ev1"}, out)
	require.Equal(t, []recordedRequest{{Method: "POST", Path: "/reservations", Key: "outflow:" + invEvent + ":reserve", ContentType: "application/json",
		Body: map[string]any{"order_id": "o1", "workflow_id": invEvent, "items": []any{map[string]any{"sku": "SKU-1", "quantity": float64(2)}}}}}, f.requests)
}

// The release goes to the order's release endpoint under the release key,
// the same from every caller.
func TestReleaseStockSendsTheContract(t *testing.T) {
	t.Parallel()
	f := &fakeInventory{status: http.StatusOK, replayed: true, body: `{"order_id":"o/1","workflow_id":"w","outcome":"already_released","items":[],"idempotency_key":"k"}`}
	a := newInventoryActs(t, f)

	out, err := a.ReleaseStock(context.Background(), ReleaseStockInput{EventID: invEvent, OrderID: "o/1", WorkflowID: "w"})

	require.NoError(t, err)
	require.Equal(t, InventoryAlreadyReleased, out.Outcome)
	require.True(t, out.Replayed, "Idempotent-Replayed: true is reported")
	require.Len(t, f.requests, 1)
	require.Equal(t, "/reservations/o%2F1/release", f.requests[0].Path, "the order id is escaped into one path segment")
	require.Equal(t, ReleaseKey(invEvent), f.requests[0].Key)
	require.Equal(t, map[string]any{"workflow_id": "w"}, f.requests[0].Body)
}

// A 5xx is retryable (the key replays the first answer); a 4xx is the
// inventory refusing the request, final.
func TestInventoryErrorsAreClassified(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status       int
		nonRetryable bool
	}{{http.StatusInternalServerError, false}, {http.StatusServiceUnavailable, false}, {http.StatusConflict, true}, {http.StatusUnprocessableEntity, true}} {
		f := &fakeInventory{status: tc.status, body: `{"error":{"code":"some_code","message":"no"}}`}
		a := newInventoryActs(t, f)
		_, err := a.ReleaseStock(context.Background(), ReleaseStockInput{EventID: invEvent, OrderID: "o1", WorkflowID: "w"})
		require.Error(t, err, "status %d", tc.status)
		var appErr *temporal.ApplicationError
		if tc.nonRetryable {
			require.ErrorAs(t, err, &appErr, "status %d", tc.status)
			require.True(t, appErr.NonRetryable())
			require.Equal(t, ErrTypeInventoryRefused, appErr.Type())
			require.Contains(t, err.Error(), "some_code")
		} else {
			require.False(t, errors.As(err, &appErr) && appErr.NonRetryable(), "status %d must be retried", tc.status)
		}
	}
}

// InventorySettings: off without an inventory (even on a nil receiver, as
// the workflows' tests call it), on with the configured or default timeout.
func TestInventorySettings(t *testing.T) {
	t.Parallel()
	var none *Activities
	st, err := none.InventorySettings(context.Background())
	require.NoError(t, err)
	require.Equal(t, InventorySettings{}, st)
	st, _ = (&Activities{}).InventorySettings(context.Background())
	require.False(t, st.Enabled)
	st, _ = (&Activities{Inventory: &InventoryClient{BaseURL: "http://x"}}).InventorySettings(context.Background())
	require.Equal(t, InventorySettings{Enabled: true, AnswerTimeout: DefaultInventoryAnswerTimeout}, st)
	st, _ = (&Activities{Inventory: &InventoryClient{BaseURL: "http://x"}, InventoryAnswerTimeout: time.Minute}).InventorySettings(context.Background())
	require.Equal(t, time.Minute, st.AnswerTimeout)

	acts, err := New(Config{StripeAPIBase: "http://127.0.0.1:1", EmailAPIBase: "http://127.0.0.1:1", InventoryURL: "http://127.0.0.1:8090", InventoryAnswerTimeout: 3 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8090", acts.Inventory.BaseURL)
	require.Equal(t, 3*time.Minute, acts.InventoryAnswerTimeout)
	acts, err = New(Config{StripeAPIBase: "http://127.0.0.1:1", EmailAPIBase: "http://127.0.0.1:1"})
	require.NoError(t, err)
	require.Nil(t, acts.Inventory)
}
