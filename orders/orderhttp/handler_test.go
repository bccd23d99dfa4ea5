package orderhttp

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/orders"
)

// TestOrderLifecycle goes create → get → cancel → cancel again → get, and
// checks every response against docs/reference.md.
func TestOrderLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t, "")

	resp := b.post(t, validBody)
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	require.Empty(t, resp.Header.Get("Idempotent-Replayed"))
	var created orders.CreateOrderResult
	require.NoError(t, json.Unmarshal(resp.Body, &created))
	require.Equal(t, orders.StatusPending, created.Status)
	require.Equal(t, int64(2500), created.Amount)
	require.Equal(t, "usd", created.Currency)
	require.Equal(t, int64(1), created.AggregateSequence)
	require.NotEqual(t, uuid.Nil, created.EventID)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(resp.Body, &raw))
	require.ElementsMatch(t, []string{"order_id", "status", "amount", "currency", "event_id", "aggregate_sequence"}, keys(raw))

	path := "/orders/" + created.OrderID.String()
	resp = b.do(t, http.MethodGet, path, "")
	require.Equal(t, http.StatusOK, resp.Status)
	var got map[string]any
	require.NoError(t, json.Unmarshal(resp.Body, &got))
	require.Equal(t, "pending", got["status"])
	require.Contains(t, got, "payment_intent_id")
	require.Contains(t, got, "refund_id")
	events := got["events"].([]any)
	require.Len(t, events, 1)
	ev := events[0].(map[string]any)
	require.Equal(t, created.EventID.String(), ev["event_id"])
	require.Equal(t, "OrderCreated", ev["event_type"])
	require.EqualValues(t, 1, ev["aggregate_sequence"])
	require.Nil(t, ev["published_at"])
	require.Nil(t, ev["workflow_id"])

	resp = b.do(t, http.MethodPost, path+"/cancel", "")
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	require.Empty(t, resp.Header.Get("Idempotent-Replayed"))
	firstCancel := resp.Body
	var cancelled orders.CancelOrderResult
	require.NoError(t, json.Unmarshal(firstCancel, &cancelled))
	require.Equal(t, created.OrderID, cancelled.OrderID)
	require.Equal(t, int64(2), cancelled.AggregateSequence)

	resp = b.do(t, http.MethodPost, path+"/cancel", "")
	require.Equal(t, http.StatusAccepted, resp.Status)
	require.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(firstCancel), string(resp.Body), "a repeated cancel returns the first one's body")

	resp = b.do(t, http.MethodGet, path, "")
	require.NoError(t, json.Unmarshal(resp.Body, &got))
	require.Equal(t, "pending", got["status"], "cancelled only once the cancel saga is done")
	require.Equal(t, true, got["cancel_requested"])
	require.Len(t, got["events"], 2)
	require.Equal(t, rowCounts{Orders: 1, Events: 2}, countRows(b.ctx, t, b.pool))
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func TestOrderIDErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{http.MethodGet, "/orders/not-a-uuid", 400, "invalid_order_id"},
		{http.MethodPost, "/orders/not-a-uuid/cancel", 400, "invalid_order_id"},
		{http.MethodGet, "/orders/" + uuid.NewString(), 404, "order_not_found"},
		{http.MethodPost, "/orders/" + uuid.NewString() + "/cancel", 404, "order_not_found"},
		{http.MethodGet, "/nowhere", 404, "not_found"},
		{http.MethodDelete, "/orders/" + uuid.NewString(), 405, "method_not_allowed"},
		{http.MethodGet, "/orders", 405, "method_not_allowed"},
		{http.MethodGet, "/orders/" + uuid.NewString() + "/cancel", 405, "method_not_allowed"},
		{http.MethodPost, "/healthz", 405, "method_not_allowed"},
	} {
		resp := b.do(t, tc.method, tc.path, "")
		require.Equal(t, tc.status, resp.Status, "%s %s: %s", tc.method, tc.path, resp.Body)
		var e errorBody
		require.NoError(t, json.Unmarshal(resp.Body, &e))
		require.Equal(t, tc.code, e.Error.Code)
		if tc.status == http.StatusMethodNotAllowed {
			require.NotEmpty(t, resp.Header.Get("Allow"), "a 405 names the allowed method")
		}
	}
	require.Equal(t, rowCounts{}, countRows(b.ctx, t, b.pool))
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()

	t.Run("replay returns the stored response and writes nothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "")
		first := b.post(t, validBody, "Idempotency-Key", "k-1")
		require.Equal(t, http.StatusCreated, first.Status)
		require.Empty(t, first.Header.Get("Idempotent-Replayed"))
		after := countRows(b.ctx, t, b.pool)
		require.Equal(t, rowCounts{Orders: 1, Events: 1, Keys: 1}, after)

		// Same request, other formatting.
		again := b.post(t, "  "+strings.ReplaceAll(validBody, `"usd"`, `"USD"`)+"\n", "Idempotency-Key", "k-1")
		require.Equal(t, http.StatusCreated, again.Status, "a replay has the stored status")
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		require.Equal(t, string(first.Body), string(again.Body), "the replay is the first response byte for byte")
		require.Equal(t, after, countRows(b.ctx, t, b.pool))
	})

	t.Run("another body is 422 idempotency_key_reused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "")
		require.Equal(t, http.StatusCreated, b.post(t, validBody, "Idempotency-Key", "k-1").Status)
		after := countRows(b.ctx, t, b.pool)
		resp := b.post(t, strings.Replace(validBody, `"quantity":2`, `"quantity":3`, 1), "Idempotency-Key", "k-1")
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status)
		var e errorBody
		require.NoError(t, json.Unmarshal(resp.Body, &e))
		require.Equal(t, "idempotency_key_reused", e.Error.Code)
		require.Equal(t, after, countRows(b.ctx, t, b.pool))
	})

	t.Run("concurrent requests with one key create one order", func(t *testing.T) {
		t.Parallel()
		b := setup(t, "")
		const n = 16
		var wg sync.WaitGroup
		start := make(chan struct{})
		resps := make([]response, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				resps[i] = b.post(t, validBody, "Idempotency-Key", "same")
			}()
		}
		close(start)
		wg.Wait()
		replayed := 0
		for _, r := range resps {
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Body)
			require.JSONEq(t, string(resps[0].Body), string(r.Body))
			if r.Header.Get("Idempotent-Replayed") == "true" {
				replayed++
			}
		}
		require.Equal(t, n-1, replayed)
		require.Equal(t, rowCounts{Orders: 1, Events: 1, Keys: 1}, countRows(b.ctx, t, b.pool))
	})
}

func TestBearerAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, "s3cret-token")
	for _, tc := range []struct {
		name, header string
		status       int
	}{
		{"missing", "", 401},
		{"wrong token", "Bearer s3cret-tokem", 401},
		{"prefix of the token", "Bearer s3cret", 401},
		{"wrong scheme", "Basic czNjcmV0LXRva2Vu", 401},
		{"no scheme", "s3cret-token", 401},
		{"right token", "Bearer s3cret-token", 201},
		{"scheme is case-insensitive", "bearer s3cret-token", 201},
	} {
		var headers []string
		if tc.header != "" {
			headers = []string{"Authorization", tc.header}
		}
		before := countRows(b.ctx, t, b.pool)
		resp := b.post(t, validBody, headers...)
		require.Equal(t, tc.status, resp.Status, tc.name)
		if tc.status == 401 {
			require.True(t, strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer "), tc.name)
			var e errorBody
			require.NoError(t, json.Unmarshal(resp.Body, &e))
			require.Equal(t, "unauthorized", e.Error.Code)
			require.Equal(t, before, countRows(b.ctx, t, b.pool), "an unauthorized request writes nothing")
		}
	}
	// Every /orders route is protected, and so is /metrics on the public
	// port; the health probe is not.
	require.Equal(t, 401, b.do(t, http.MethodGet, "/orders/"+uuid.NewString(), "").Status)
	require.Equal(t, 401, b.do(t, http.MethodPost, "/orders/"+uuid.NewString()+"/cancel", "").Status)
	require.Equal(t, 200, b.do(t, http.MethodGet, "/healthz", "").Status)
	require.Equal(t, 401, b.do(t, http.MethodGet, "/metrics", "").Status)
	require.Equal(t, 200, b.do(t, http.MethodGet, "/metrics", "", "Authorization", "Bearer s3cret-token").Status, "a scraper with the token")
}

func TestHealthzAndMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	resp := b.do(t, http.MethodGet, "/healthz", "")
	require.Equal(t, http.StatusOK, resp.Status)
	require.JSONEq(t, `{"status":"ok"}`, string(resp.Body))

	require.Equal(t, http.StatusCreated, b.post(t, validBody, "Idempotency-Key", "m").Status)
	require.Equal(t, http.StatusCreated, b.post(t, validBody, "Idempotency-Key", "m").Status)
	require.Equal(t, http.StatusUnprocessableEntity, b.post(t, with("currency", `"abc"`)).Status)

	resp = b.do(t, http.MethodGet, "/metrics", "")
	require.Equal(t, http.StatusOK, resp.Status)
	text := string(resp.Body)
	require.Contains(t, text, `orderapi_http_requests_total{code="201",route="POST /orders"} 2`)
	require.Contains(t, text, `orderapi_http_requests_total{code="422",route="POST /orders"} 1`)
	require.Contains(t, text, `orderapi_http_request_duration_seconds_count{route="POST /orders"} 3`)
	require.Contains(t, text, `orderapi_idempotent_replays_total 1`)
	require.Contains(t, text, `go_goroutines`, "the dedicated registry carries the Go collector")
}

func TestHealthzReportsDatabaseDown(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	b.pool.Close()
	resp := b.do(t, http.MethodGet, "/healthz", "")
	require.Equal(t, http.StatusServiceUnavailable, resp.Status)
	var e errorBody
	require.NoError(t, json.Unmarshal(resp.Body, &e))
	require.Equal(t, "database_unavailable", e.Error.Code)
}

func TestNewRequiresDB(t *testing.T) {
	t.Parallel()
	_, err := New(Config{})
	require.ErrorContains(t, err, "Config.DB is required")
}
