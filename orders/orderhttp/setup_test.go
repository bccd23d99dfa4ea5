package orderhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

const validBody = `{"customer_email":"ann@example.com","currency":"usd","payment_method":"pm_card_visa",` +
	`"items":[{"sku":"SKU-1","quantity":2,"unit_amount":1250}]}`

type testBundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	server *httptest.Server
}

// setup serves the API on its own migrated database; token enables auth.
func setup(t *testing.T, token string) testBundle {
	t.Helper()
	pool, _ := testdb.New(t)
	h, err := New(Config{DB: pool, Token: token, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return testBundle{ctx: ctx, pool: pool, server: srv}
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a request; headers are name, value pairs.
func (b testBundle) do(t *testing.T, method, path, body string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(b.ctx, method, b.server.URL+path, bytes.NewBufferString(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.server.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: out}
}

// post sends a JSON POST /orders.
func (b testBundle) post(t *testing.T, body string, headers ...string) response {
	t.Helper()
	return b.do(t, http.MethodPost, "/orders", body, append([]string{"Content-Type", "application/json"}, headers...)...)
}

type rowCounts struct{ Orders, Events, Keys int }

func countRows(ctx context.Context, t testing.TB, pool *pgxpool.Pool) rowCounts {
	t.Helper()
	var c rowCounts
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM idempotency_keys)`).
		Scan(&c.Orders, &c.Keys))
	c.Events = len(outboxtest.Events(t, pool, outboxtest.Match{}))
	return c
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"error"`
}

// requireRejected requires resp to be a refusal with status and an error
// body naming code and field, with a message.
func requireRejected(t *testing.T, resp response, status int, code, field string) {
	t.Helper()
	require.Equal(t, status, resp.Status, "body: %s", resp.Body)
	var e errorBody
	require.NoError(t, json.Unmarshal(resp.Body, &e), "%s", resp.Body)
	require.Equal(t, code, e.Error.Code, "%s", resp.Body)
	require.Equal(t, field, e.Error.Field, "%s", resp.Body)
	require.NotEmpty(t, e.Error.Message)
}

// requireNothingWrittenAtEnd checks, once t's subtests are done, that b's
// database holds no order, event or key: every request t made was refused.
func (b testBundle) requireNothingWrittenAtEnd(t *testing.T) {
	t.Cleanup(func() {
		require.Equal(t, rowCounts{}, countRows(b.ctx, t, b.pool), "a rejected request writes nothing")
	})
}
