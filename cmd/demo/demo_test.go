package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/personal"
	"github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/providersim"
	"github.com/outflow/outflow/workflows"
)

func TestScenarioExpectations(t *testing.T) {
	t.Parallel()
	byName := map[string]scenario{}
	for _, sc := range scenarios() {
		byName[sc.name] = sc
	}
	require.Len(t, byName, 8, "scenario names must be unique")

	happy := byName["happy path"].expect
	require.Empty(t, happy.check(observed{stock: "reserved", status: "confirmed", charges: 1, paymentIntents: 1, emails: []string{"confirmation"}}))
	require.Contains(t, happy.check(observed{stock: "reserved", status: "paid", charges: 1, paymentIntents: 1, emails: []string{"confirmation"}}), "status paid")
	require.Contains(t, happy.check(observed{stock: "reserved", status: "confirmed", charges: 2, paymentIntents: 2, emails: []string{"confirmation"}}), "charges=2")
	require.Contains(t, happy.check(observed{stock: "reserved", status: "confirmed", charges: 1, paymentIntents: 1, emails: []string{"confirmation", "confirmation"}}), "emails")
	require.Contains(t, happy.check(observed{stock: "reserved", status: "confirmed", charges: 1, paymentIntents: 1, emails: []string{"confirmation"}, duplicateEffects: 1}), "stored twice")

	timeout := byName["provider timeout (outcome unknown)"].expect
	require.Contains(t, timeout.check(observed{stock: "reserved", status: "confirmed", charges: 1, paymentIntents: 2, emails: []string{"confirmation"}}), "2 payment intents",
		"a lost answer must be reconciled, never charged again")

	declined := byName["declined card"].expect
	require.Empty(t, declined.check(observed{stock: "released", status: "payment_failed", paymentIntents: 1, emails: []string{"payment_failed"}}))

	racing := byName["cancel racing the charge"].expect
	require.Empty(t, racing.check(observed{stock: "released", status: "cancelled", emails: []string{"cancellation"}}), "never charged")
	require.Empty(t, racing.check(observed{stock: "released", status: "cancelled", charges: 1, refunds: 1, paymentIntents: 1, emails: []string{"cancellation"}}), "refunded")
	require.Empty(t, racing.check(observed{stock: "released", status: "cancelled", charges: 1, refunds: 1, paymentIntents: 1, emails: []string{"confirmation", "cancellation"}}), "cancel after the confirmation mail")
	require.Contains(t, racing.check(observed{stock: "released", status: "cancelled", charges: 1, paymentIntents: 1, emails: []string{"cancellation"}}), "net charge not zero")
	require.Contains(t, racing.check(observed{stock: "released", status: "cancelled", emails: []string{"cancellation", "cancellation"}}), "emails")

	late := byName["cancel after confirmation"].expect
	require.Empty(t, late.check(observed{stock: "released", status: "cancelled", charges: 1, refunds: 1, paymentIntents: 1, emails: []string{"confirmation", "cancellation"}}))
	require.Contains(t, late.check(observed{stock: "released", status: "cancelled", charges: 1, paymentIntents: 1, emails: []string{"confirmation", "cancellation"}}), "refunds=0")

	require.Contains(t, happy.check(observed{stock: "released", status: "confirmed", charges: 1, paymentIntents: 1, emails: []string{"confirmation"}}), "stock released, want reserved")
	require.Empty(t, racing.check(observed{stock: "none", status: "cancelled", emails: []string{"cancellation"}}), "cancelled before any reserve")

	// Out of stock: the order fails before any money moves, with nothing
	// reserved and the provider never called.
	short := byName["out of stock"]
	require.Contains(t, short.orderItems(), item{soldOutSKU, 1, 1500})
	require.Zero(t, demoStock[soldOutSKU])
	require.Empty(t, short.expect.check(observed{stock: "none", status: "payment_failed", emails: []string{"stock_unavailable"}}))
	require.Contains(t, short.expect.check(observed{stock: "none", status: "payment_failed", paymentIntents: 1, emails: []string{"stock_unavailable"}}), "want none")
	require.Contains(t, short.expect.check(observed{stock: "reserved", status: "payment_failed", emails: []string{"stock_unavailable"}}), "stock reserved, want none")
	require.Contains(t, short.expect.check(observed{stock: "none", status: "payment_failed", emails: []string{"payment_failed"}}), "emails")

	// The asynchronous payment: pending until the demo settles it, then
	// confirmed by its webhook (processing and succeeded, both recorded).
	async := byName["async payment, webhook"]
	require.Equal(t, webhookSettle, async.webhook)
	ok := observed{stock: "reserved", status: "confirmed", charges: 1, paymentIntents: 1, emails: []string{"confirmation"},
		webhooks: 2, recorded: 2, beforeWebhook: "pending"}
	require.Empty(t, async.expect.check(ok))
	early := ok
	early.beforeWebhook = "confirmed"
	require.Contains(t, async.expect.check(early), "before the webhook", "confirmed before the webhook was sent: not the webhook's doing")
	unrecorded := ok
	unrecorded.recorded = 1
	require.Contains(t, async.expect.check(unrecorded), "1 webhook events recorded, want 2")

	// Twice and out of order: three deliveries of two events, the duplicate
	// records nothing, the order changes once (one charge, one email).
	twice := byName["webhook twice, out of order"]
	require.Equal(t, webhookTwiceReordered, twice.webhook)
	ok.webhooks = 3
	require.Empty(t, twice.expect.check(ok))
	dup := ok
	dup.recorded = 3
	require.Contains(t, twice.expect.check(dup), "3 webhook events recorded, want 2", "the duplicate must be recognised")
	again := ok
	again.emails = []string{"confirmation", "confirmation"}
	require.Contains(t, twice.expect.check(again), "emails")
}

func TestObserveReadsOnlyTheOrdersEffects(t *testing.T) {
	t.Parallel()
	l := providersim.Ledger{
		PaymentIntents: []providersim.LedgerPaymentIntent{
			{ID: "pi_1", Status: "succeeded", IdempotencyKey: "k1", Metadata: map[string]string{"order_id": "o1"}},
			{ID: "pi_2", Status: "requires_payment_method", IdempotencyKey: "k2", Metadata: map[string]string{"order_id": "o1"}},
			{ID: "pi_3", Status: "succeeded", IdempotencyKey: "k3", Metadata: map[string]string{"order_id": "o2"}},
		},
		Refunds: []providersim.LedgerRefund{
			{ID: "re_1", PaymentIntent: "pi_1", Status: "succeeded", IdempotencyKey: "r1"},
			{ID: "re_2", PaymentIntent: "pi_3", Status: "succeeded", IdempotencyKey: "r2"},
		},
		Emails: []providersim.LedgerEmail{
			{ID: "e1", Tags: map[string]string{"order_id": "o1", "kind": "confirmation"}, IdempotencyKey: "m1"},
			{ID: "e2", Tags: map[string]string{"order_id": "o1", "kind": "cancellation"}, IdempotencyKey: "m1"},
			{ID: "e3", Tags: map[string]string{"order_id": "o2", "kind": "confirmation"}, IdempotencyKey: "m3"},
		},
	}
	o := observe(l, "o1", "cancelled")
	require.Equal(t, observed{status: "cancelled", charges: 1, refunds: 1, paymentIntents: 2,
		emails: []string{"confirmation", "cancellation"}, duplicateEffects: 1}, o)
}

func TestPrintTable(t *testing.T) {
	t.Parallel()
	sc := scenarios()
	rows := []result{
		{orderID: "0191aaaa-bbbb", scenario: sc[1], observed: observed{status: "confirmed", charges: 1, emails: []string{"confirmation"}},
			workflows: []workflowLink{{eventType: "OrderCreated", workflowID: "wf-1", url: "http://127.0.0.1:8233/namespaces/default/workflows/wf-1"}},
			traceID:   "4bf92f3577b34da6a3ce929d0e0e4736", traceURL: "http://127.0.0.1:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736"},
		{orderID: "0191cccc-dddd", scenario: sc[2], observed: observed{status: "pending"}, mismatch: "status pending, want payment_failed",
			workflows: []workflowLink{{eventType: "OrderCreated", workflowID: "wf-2"}}},
	}
	var buf bytes.Buffer
	require.False(t, printTable(&buf, rows), "one row mismatched")
	out := buf.String()
	require.Contains(t, out, "ORDER")
	require.Contains(t, out, "happy path")
	require.Contains(t, out, "MISMATCH 0191cccc-dddd (declined card): status pending, want payment_failed")
	require.Contains(t, out, "http://127.0.0.1:8233/namespaces/default/workflows/wf-1")
	require.Contains(t, out, "workflow id wf-2")
	require.Contains(t, out, "0191aaaa-bbbb trace: http://127.0.0.1:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736", "the order's trace beside its workflows")
	require.NotContains(t, out, "0191cccc-dddd trace:", "no link without a trace")
	require.Contains(t, out, "STOCK")
	require.Contains(t, out, "WEBHOOKS")

	buf.Reset()
	require.True(t, printTable(&buf, rows[:1]))
}

// TestDemoDatabaseLeftByAnotherDemo: the demo's own database on a server
// where a demo of another clone ran before, with another demo key. The
// second clone must not start on the first one's customer keys (every
// returning customer's order would fail to publish: "no charge reached the
// simulator"): it recreates the database and says so. The same clone
// reuses its database; a database in use is never dropped; keys the
// operator supplied are never taken as a reason to drop anything.
func TestDemoDatabaseLeftByAnotherDemo(t *testing.T) {
	t.Setenv(codec.KeysEnv, "")
	t.Setenv(codec.KeysFileEnv, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	server := testdb.AdminURL()
	name := demoTestDatabase(t, server, "outflow_demo_test_")
	var said strings.Builder
	say := func(format string, args ...any) { fmt.Fprintf(&said, format+"\n", args...) }
	var fresh bool
	prepare := func(c *demoCodec) (string, error) {
		said.Reset()
		url, f, err := prepareDemoDatabase(ctx, server, name, c, say)
		fresh = f
		return url, err
	}
	// A customer's key appears as the demo's relay makes it: when it first
	// encodes one of their orders.
	useAs := func(url string, c *demoCodec, emails ...string) {
		t.Helper()
		pool := testdb.Open(t, url)
		defer pool.Close()
		_, err := migrations.Up(ctx, pool, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		keys, err := codec.ParseKeys(c.keys)
		require.NoError(t, err)
		dc := codec.NewDataConverter(keys, codec.Options{Store: codec.NewPGStore(pool), Subject: personal.Subject})
		for _, email := range emails {
			_, err := dc.ToPayloads(handoff.EventInput{EventID: uuid.NewString(), EventType: orders.EventOrderCreated,
				Payload: []byte(`{"customer_email":"` + email + `"}`)})
			require.NoError(t, err)
		}
		require.NoError(t, codec.CheckCustomerKeys(ctx, pool, keys), "usable by the clone that made it")
	}

	cloneA, err := demoCodecKeys(t.TempDir())
	require.NoError(t, err)
	require.True(t, cloneA.own)
	url, err := prepare(cloneA)
	require.NoError(t, err)
	require.Contains(t, said.String(), "created the demo's own database "+name)
	require.True(t, fresh)
	require.Contains(t, url, "/"+name)
	useAs(url, cloneA, "customer1@example.com", "customer2@example.com")

	_, err = prepare(cloneA)
	require.NoError(t, err)
	require.Contains(t, said.String(), "reusing the demo's own database "+name, "the same clone keeps its database")
	require.False(t, fresh)

	// A second clone: its own .data, so its own demo key (the same key id
	// on the same day, other bytes).
	cloneB, err := demoCodecKeys(t.TempDir())
	require.NoError(t, err)
	require.Equal(t, cloneA.keyID, cloneB.keyID)
	url, err = prepare(cloneB)
	require.NoError(t, err)
	require.Contains(t, said.String(), "made by a demo with another key", "never silently")
	require.Contains(t, said.String(), "recreating "+name)
	require.True(t, fresh, "the inventory's database follows")
	useAs(url, cloneB, "customer1@example.com")

	// A third clone while the second one's demo still holds a connection.
	busy := testdb.Open(t, url)
	require.NoError(t, busy.Ping(ctx))
	cloneC, err := demoCodecKeys(t.TempDir())
	require.NoError(t, err)
	_, err = prepare(cloneC)
	require.ErrorContains(t, err, "is in use")
	busy.Close()
	keysB, err := codec.ParseKeys(cloneB.keys)
	require.NoError(t, err)
	check := testdb.Open(t, url)
	require.NoError(t, codec.CheckCustomerKeys(ctx, check, keysB), "a database in use is left as it was")
	check.Close()

	// Keys from the environment are the operator's: refuse, never drop.
	t.Setenv(codec.KeysEnv, codec.NewKeySpec("ops-1"))
	supplied, err := demoCodecKeys(t.TempDir())
	require.NoError(t, err)
	require.False(t, supplied.own)
	_, err = prepare(supplied)
	require.ErrorIs(t, err, codec.ErrKeysMismatch)
	require.ErrorContains(t, err, "dropdb "+name)
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	u, err := withDatabase("postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "outflow_demo")
	require.NoError(t, err)
	require.Equal(t, "postgres://postgres@127.0.0.1:5432/outflow_demo?sslmode=disable", u)
	u, err = withDatabase("host=127.0.0.1 user=postgres dbname=app", "outflow_demo")
	require.NoError(t, err)
	cfg, err := pgx.ParseConfig(u)
	require.NoError(t, err)
	require.Equal(t, "outflow_demo", cfg.Database)
}

// TestInventoryDatabaseFollowsTheDemos: the inventory's own database is
// created when missing, reused with the demo's, and recreated when the
// demo's was just (re)created: its reservations belonged to that
// database's orders.
func TestInventoryDatabaseFollowsTheDemos(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server := testdb.AdminURL()
	name := demoTestDatabase(t, server, "outflow_demo_inventory_test_")
	var said strings.Builder
	say := func(format string, args ...any) { fmt.Fprintf(&said, format+"\n", args...) }
	url, err := prepareInventoryDatabase(ctx, server, name, false, say)
	require.NoError(t, err)
	require.Contains(t, said.String(), "created the inventory's own database "+name)
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, "CREATE TABLE left_by_an_earlier_demo (id int)")
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	said.Reset()
	_, err = prepareInventoryDatabase(ctx, server, name, false, say)
	require.NoError(t, err)
	require.Contains(t, said.String(), "reusing the inventory's own database "+name)

	said.Reset()
	_, err = prepareInventoryDatabase(ctx, server, name, true, say)
	require.NoError(t, err)
	require.Contains(t, said.String(), "recreating the inventory's database "+name)
	conn, err = pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var left bool
	require.NoError(t, conn.QueryRow(ctx, "SELECT to_regclass('left_by_an_earlier_demo') IS NOT NULL").Scan(&left))
	require.False(t, left, "recreated empty")
}

// TestInventoryLateEventWorkflowName: the name the demo gives the inventory
// service is the worker's workflow.
func TestInventoryLateEventWorkflowName(t *testing.T) {
	require.Equal(t, workflows.InventoryLateEventWorkflowName, inventoryLateEventWorkflow)
}

// demoTestDatabase names a database of the test's own on server, prefix
// and a random suffix, for the demo's code to create, and drops it when
// the test ends.
func demoTestDatabase(t *testing.T, server, prefix string) string {
	t.Helper()
	name := prefix + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	t.Cleanup(func() {
		admin, err := pgx.Connect(context.Background(), server)
		require.NoError(t, err)
		defer admin.Close(context.Background())
		_, err = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		require.NoError(t, err)
	})
	return name
}
