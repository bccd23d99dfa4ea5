package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

const orderBody = `{"customer_email":"ann@example.com","currency":"usd","payment_method":"pm_card_visa",` +
	`"items":[{"sku":"SKU-1","quantity":2,"unit_amount":1250}]}`

// TestOrderAPIProcess runs the real orderapi binary as a child process: the
// crash tests kill it with its own failpoints at the two order boundaries
// and check the database afterwards. The binary is built once into the
// parent test's temporary directory; the subtests run in parallel, each on
// its own database.
func TestOrderAPIProcess(t *testing.T) {
	t.Parallel()
	bin := proc.Build(t, "orderapi", ".")

	t.Run("before_commit crash leaves nothing; the retry creates the order once", func(t *testing.T) {
		t.Parallel()
		url := testdb.NewURL(t)
		pool := openPool(t, url)

		p := startOrderAPI(t, bin, url, "OUTFLOW_FAILPOINTS=orders.before_commit=crash")
		_, err := postOrder(t, p.Addr, "retry-key-1")
		require.Error(t, err, "the process dies before answering: the client sees a connection error")
		p.RequireKilled(t, "orders.before_commit")
		require.Equal(t, rowCounts{}, countRows(t, pool), "invariant 2: an uncommitted order leaves no row and no event")

		p = startOrderAPI(t, bin, url)
		resp, err := postOrder(t, p.Addr, "retry-key-1")
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, resp.status, "%s", resp.body)
		require.Empty(t, resp.header.Get("Idempotent-Replayed"), "nothing was stored, so nothing is replayed")
		require.Equal(t, rowCounts{Orders: 1, Events: 1, Keys: 1}, countRows(t, pool))
	})

	t.Run("after_commit crash keeps order and event once; the retry replays", func(t *testing.T) {
		t.Parallel()
		url := testdb.NewURL(t)
		pool := openPool(t, url)

		p := startOrderAPI(t, bin, url, "OUTFLOW_FAILPOINTS=orders.after_commit=crash")
		_, err := postOrder(t, p.Addr, "retry-key-2")
		require.Error(t, err, "the process dies after COMMIT, before the response")
		p.RequireKilled(t, "orders.after_commit")
		require.Equal(t, rowCounts{Orders: 1, Events: 1, Keys: 1}, countRows(t, pool), "invariant 1: the committed order has its event")
		var createdEventID uuid.UUID
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT created_event_id FROM orders`).Scan(&createdEventID))
		created := outboxtest.RequireEnqueued(t, pool, outboxtest.Match{ID: createdEventID})
		require.Equal(t, "OrderCreated", created.Type)
		require.Equal(t, int64(1), created.Sequence)

		p = startOrderAPI(t, bin, url)
		resp, err := postOrder(t, p.Addr, "retry-key-2")
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, resp.status, "the replay has the stored status")
		require.Equal(t, "true", resp.header.Get("Idempotent-Replayed"))
		var body struct {
			OrderID string `json:"order_id"`
		}
		require.NoError(t, json.Unmarshal(resp.body, &body))
		var orderID string
		require.NoError(t, pool.QueryRow(t.Context(), "SELECT id::text FROM orders").Scan(&orderID))
		require.Equal(t, orderID, body.OrderID, "the stored response names the committed order")
		require.Equal(t, rowCounts{Orders: 1, Events: 1, Keys: 1}, countRows(t, pool), "no second order")
	})

	t.Run("webhook after_commit crash keeps the webhook once; Stripe's redelivery writes nothing", func(t *testing.T) {
		t.Parallel()
		url := testdb.NewURL(t)
		pool := openPool(t, url)
		const secret = "whsec_process_test"
		p := startOrderAPI(t, bin, url, "STRIPE_WEBHOOK_SECRET="+secret)
		resp, err := postOrder(t, p.Addr, "")
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, resp.status, "%s", resp.body)
		var created orders.CreateOrderResult
		require.NoError(t, json.Unmarshal(resp.body, &created))
		p.RequireStopped(t)

		body, err := json.Marshal(map[string]any{"id": "evt_crash_1", "object": "event", "type": "payment_intent.succeeded",
			"created": time.Now().Unix(), "data": map[string]any{"object": map[string]any{
				"id": "pi_crash_1", "object": "payment_intent", "status": "succeeded",
				"metadata": map[string]string{"order_id": created.OrderID.String(), "event_id": created.EventID.String()}}}})
		require.NoError(t, err)
		deliver := func(addr string) (httpResponse, error) {
			signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret})
			req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhooks/stripe", bytes.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("Stripe-Signature", signed.Header)
			r, err := newClient().Do(req)
			if err != nil {
				return httpResponse{}, err
			}
			defer r.Body.Close()
			b, err := io.ReadAll(r.Body)
			return httpResponse{status: r.StatusCode, header: r.Header, body: b}, err
		}
		webhookEvents := func() int {
			return len(outboxtest.Events(t, pool, outboxtest.Match{Type: orders.EventPaymentWebhookReceived}))
		}

		p = startOrderAPI(t, bin, url, "STRIPE_WEBHOOK_SECRET="+secret, "OUTFLOW_FAILPOINTS=webhook.after_commit=crash")
		_, err = deliver(p.Addr)
		require.Error(t, err, "the process dies after COMMIT, before its 200: Stripe sees a failed delivery and retries")
		p.RequireKilled(t, "webhook.after_commit")
		require.Equal(t, 1, webhookEvents(), "invariant 1: the committed webhook has its event")

		p = startOrderAPI(t, bin, url, "STRIPE_WEBHOOK_SECRET="+secret)
		resp, err = deliver(p.Addr)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
		require.Contains(t, string(resp.body), `"duplicate":true`, "the redelivery is recognised by the inbox")
		require.Equal(t, 1, webhookEvents(), "no second event")
		p.RequireStopped(t)
	})

	t.Run("before_commit error rolls back and answers 500", func(t *testing.T) {
		t.Parallel()
		url := testdb.NewURL(t)
		pool := openPool(t, url)
		p := startOrderAPI(t, bin, url, "OUTFLOW_FAILPOINTS=orders.before_commit=error")
		resp, err := postOrder(t, p.Addr, "")
		require.NoError(t, err)
		require.Equal(t, http.StatusInternalServerError, resp.status)
		require.Contains(t, string(resp.body), `"internal_error"`)
		require.Equal(t, rowCounts{}, countRows(t, pool))
		p.RequireStopped(t)
	})

	t.Run("malformed OUTFLOW_FAILPOINTS stops the binary", func(t *testing.T) {
		t.Parallel()
		url := testdb.NewURL(t)
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "ORDERAPI_ADDR=127.0.0.1:0", "OUTFLOW_FAILPOINTS=orders.before_comit=crash")
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		require.ErrorAs(t, err, &exitErr)
		require.Equal(t, 2, exitErr.ExitCode(), "a configuration error")
		require.Contains(t, string(out), "orderapi: OUTFLOW_FAILPOINTS")
		require.Contains(t, string(out), `unknown failpoint "orders.before_comit"`)
	})

	t.Run("SIGTERM shuts down gracefully", func(t *testing.T) {
		t.Parallel()
		url := testdb.NewURL(t)
		p := startOrderAPI(t, bin, url, "ORDERAPI_TOKEN=tok")
		req, err := http.NewRequest(http.MethodGet, "http://"+p.Addr+"/healthz", nil)
		require.NoError(t, err)
		resp, err := newClient().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		p.RequireStopped(t)
		require.Contains(t, p.Log(), "msg=stopped")
	})
}

// startOrderAPI starts bin on url with ORDERAPI_ADDR=127.0.0.1:0 and extra
// environment, and waits for its "listening" line.
func startOrderAPI(t *testing.T, bin, url string, env ...string) *proc.Server {
	t.Helper()
	return proc.StartServer(t, "orderapi", bin, 30*time.Second, append([]string{
		"DATABASE_URL=" + url, "ORDERAPI_ADDR=127.0.0.1:0", "ORDERAPI_LOG_FORMAT=text", "OUTFLOW_FAILPOINTS=",
	}, env...)...)
}

type httpResponse struct {
	status int
	header http.Header
	body   []byte
}

// newClient never reuses a connection, so a restarted server is dialled anew.
func newClient() *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
}

func postOrder(t *testing.T, addr, key string) (httpResponse, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/orders", strings.NewReader(orderBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := newClient().Do(req)
	if err != nil {
		return httpResponse{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return httpResponse{}, err
	}
	return httpResponse{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

func openPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

type rowCounts struct{ Orders, Events, Keys int }

func countRows(t *testing.T, pool *pgxpool.Pool) rowCounts {
	t.Helper()
	var c rowCounts
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM idempotency_keys)`).
		Scan(&c.Orders, &c.Keys))
	c.Events = len(outboxtest.Events(t, pool, outboxtest.Match{}))
	return c
}
