package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	// The order app's tables in testdb's template (it migrates the sets
	// the binary registers).
	_ "github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/temporalpub"
	"github.com/outflow/outflow/outbox/temporalpub/eventsignal"
)

// sagaWorkflow stands in for the order's saga: it receives the inventory's
// events through an eventsignal.Receiver set up first thing, as a saga
// would, and answers the query "status" with what it handled.
const sagaWorkflow = "InventoryTestSaga"

type sagaInput struct {
	Events eventsignal.State `json:"events"`
}

// handled is one event the saga took, its payload decoded as a saga would.
type handled struct {
	EventID   string
	EventType string
	Outcome   Outcome
}

type sagaStatus struct {
	Handled    []handled
	Duplicates int
}

func testSaga(ctx workflow.Context, in sagaInput) error {
	events := eventsignal.New[temporalpub.EventInput](ctx, DefaultSignal, in.Events, eventsignal.Options{})
	var st sagaStatus
	if err := workflow.SetQueryHandler(ctx, "status", func() (sagaStatus, error) {
		st.Duplicates = events.Duplicates()
		return st, nil
	}); err != nil {
		return err
	}
	for {
		ev, ok := events.Receive(ctx)
		if !ok {
			return ctx.Err()
		}
		var o Outcome
		if err := json.Unmarshal(ev.Payload, &o); err != nil {
			return err
		}
		st.Handled = append(st.Handled, handled{EventID: ev.EventID, EventType: ev.EventType, Outcome: o})
	}
}

// startSagaWorker runs a worker of the test saga on a task queue of its own
// and returns the queue.
func startSagaWorker(t *testing.T) string {
	t.Helper()
	tq := "inventory-test-" + uuid.NewString()
	w := worker.New(temporal.Client(), tq, worker.Options{})
	w.RegisterWorkflowWithOptions(testSaga, workflow.RegisterOptions{Name: sagaWorkflow})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return tq
}

// waitSaga waits until the saga workflowID handled n events and returns its
// status.
func waitSaga(t *testing.T, workflowID string, n int) sagaStatus {
	t.Helper()
	var st sagaStatus
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		v, err := temporal.Client().QueryWorkflow(ctx, workflowID, "", "status")
		if err != nil || v.Get(&st) != nil {
			return false
		}
		return len(st.Handled) >= n
	}, 60*time.Second, 50*time.Millisecond, "saga %s: want %d events handled", workflowID, n)
	require.Len(t, st.Handled, n, "saga %s handled more than expected: %+v", workflowID, st.Handled)
	return st
}

// newDB returns a database holding nothing but what Migrate
// applies, and its URL.
func newDB(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	url := testdb.NewEmptyURL(t)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 4
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, Migrate(ctx, pool))
	return pool, url
}

// stack is the service in process: its HTTP API on a test server and its
// relay signalling the test saga on tq.
type stack struct {
	db  *pgxpool.Pool
	url string // the API's base URL
	tq  string
}

func newStack(t *testing.T) *stack {
	t.Helper()
	db, _ := newDB(t)
	tq := startSagaWorker(t)
	svc, err := NewService(ServiceConfig{DB: db})
	require.NoError(t, err)
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)

	opts := temporal.ClientOptions("default")
	pub, err := temporalpub.New(temporal.Client(), opts, temporalpub.Config{
		TaskQueue: tq,
		Routes:    Routes(RouteConfig{Workflow: sagaWorkflow, TaskQueue: tq}),
	})
	require.NoError(t, err)
	relay, err := outbox.NewRelay(db, pub, outbox.RelayConfig{PollInterval: 200 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return &stack{db: db, url: srv.URL, tq: tq}
}

type reply struct {
	status   int
	replayed bool
	body     []byte
}

func (r reply) outcome(t *testing.T) (o Outcome, eventID string) {
	t.Helper()
	var body struct {
		Outcome
		EventID string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal(r.body, &body), "%s", r.body)
	return body.Outcome, body.EventID
}

func (r reply) errorCode(t *testing.T) string {
	t.Helper()
	var body struct {
		Error struct{ Code, Message string }
	}
	require.NoError(t, json.Unmarshal(r.body, &body), "%s", r.body)
	require.NotEmpty(t, body.Error.Message, "%s", r.body)
	return body.Error.Code
}

var httpClient = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// call sends a request with an Idempotency-Key (none when key is "").
func call(t *testing.T, method, url, key, body string) (reply, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, replayed: resp.Header.Get(ReplayedHeader) == "true", body: b}, nil
}

func mustCall(t *testing.T, method, url, key, body string) reply {
	t.Helper()
	r, err := call(t, method, url, key, body)
	require.NoError(t, err)
	return r
}

func setStock(t *testing.T, base, sku string, n int) {
	t.Helper()
	r := mustCall(t, http.MethodPut, base+"/stock/"+sku, "", `{"available":`+itoa(n)+`}`)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

type stockLevel struct{ Available, Reserved int64 }

func stockOf(t *testing.T, db *pgxpool.Pool, sku string) stockLevel {
	t.Helper()
	var s stockLevel
	require.NoError(t, db.QueryRow(t.Context(), `SELECT available, reserved FROM inventory_stock WHERE sku = $1`, sku).Scan(&s.Available, &s.Reserved))
	return s
}

// rows counts what the requests wrote.
type rows struct{ Reservations, Items, Requests, Inbox, Events int }

func countRows(t *testing.T, db *pgxpool.Pool) rows {
	t.Helper()
	var r rows
	require.NoError(t, db.QueryRow(t.Context(), `SELECT
		(SELECT count(*) FROM inventory_reservations),
		(SELECT count(*) FROM inventory_reservation_items),
		(SELECT count(*) FROM inventory_requests),
		(SELECT count(*) FROM processed_events WHERE consumer_name = $1)`, InboxConsumer).
		Scan(&r.Reservations, &r.Items, &r.Requests, &r.Inbox))
	r.Events = len(outboxtest.Events(t, db, outboxtest.Match{}))
	return r
}

func reserveBody(orderID, workflowID string, items ...string) string {
	var b strings.Builder
	b.WriteString(`{"order_id":"` + orderID + `","workflow_id":"` + workflowID + `","items":[`)
	b.WriteString(strings.Join(items, ","))
	b.WriteString(`]}`)
	return b.String()
}

func item(sku string, q int) string { return `{"sku":"` + sku + `","quantity":` + itoa(q) + `}` }
