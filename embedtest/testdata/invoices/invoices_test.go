package invoices_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"example.com/invoices"
	"github.com/outflow/outflow/outbox/inbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// TestInvoiceIssued: an invoice and its event commit together, the relay
// starts the event's InvoiceWorkflow, the workflow posts the invoice to the
// ledger, and a second delivery changes nothing.
func TestInvoiceIssued(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := openDB(t, ctx)
	require.NoError(t, invoices.Migrate(ctx, db), "migrating again finds nothing to do: neither schema sees the other's versions")
	opts := client.Options{HostPort: env(t, "TEMPORAL_ADDRESS"), Namespace: env(t, "TEMPORAL_NAMESPACE")}
	c, err := client.Dial(opts)
	require.NoError(t, err)
	defer c.Close()

	reg := prometheus.NewRegistry()
	ib, err := inbox.New(reg)
	require.NoError(t, err)
	activities := &invoices.Activities{DB: db, Inbox: ib}
	w := worker.New(c, invoices.TaskQueue, worker.Options{})
	invoices.Register(w, activities)
	require.NoError(t, w.Start())
	defer w.Stop()

	relayCtx, stopRelay := context.WithCancel(ctx)
	relayDone := make(chan error, 1)
	go func() { relayDone <- invoices.RunRelay(relayCtx, db, c, opts, reg) }()
	defer func() {
		stopRelay()
		require.NoError(t, <-relayDone)
	}()

	inv, ev, err := invoices.Issue(ctx, db, "acme", 12_500)
	require.NoError(t, err)
	enqueued := outboxtest.RequireEnqueued(t, db, outboxtest.Match{
		AggregateType: invoices.AggregateType, AggregateID: inv.ID, Type: invoices.EventIssued,
	})
	require.Equal(t, ev.ID, enqueued.ID)
	require.JSONEq(t, `{"invoice_id": "`+inv.ID+`", "customer": "acme", "amount_cents": 12500}`, string(enqueued.Payload))

	outboxtest.WaitFor(t, db, outboxtest.Match{ID: ev.ID}, 30*time.Second, outboxtest.AllPublished)
	var posted bool
	require.NoError(t, c.GetWorkflow(ctx, ev.ID.String(), "").Get(ctx, &posted))
	require.True(t, posted, "the workflow's delivery was the ledger's first")

	// The event delivered again: Temporal refuses a second workflow of the
	// same event, and the inbox a second posting.
	pub, err := temporalpub.New(c, opts, temporalpub.Config{Routes: invoices.Routes()})
	require.NoError(t, err)
	require.NoError(t, pub.Publish(ctx, ev), "a duplicate start is acknowledged")
	again, err := activities.PostToLedger(ctx, invoices.LedgerEntry{EventID: ev.ID.String(), InvoiceID: inv.ID, AmountCents: inv.AmountCents})
	require.NoError(t, err)
	require.False(t, again, "the second delivery is a duplicate")
	require.Equal(t, 1.0, duplicates(t, reg, invoices.LedgerConsumer))

	var entries int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM ledger_entries WHERE invoice_id = $1`, inv.ID).Scan(&entries))
	require.Equal(t, 1, entries, "one ledger entry for one event")
}

// TestIssueRolledBack: a rolled-back invoice leaves no event.
func TestIssueRolledBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := openDB(t, ctx)
	tx, err := db.Begin(ctx)
	require.NoError(t, err)
	inv, _, err := invoices.IssueTx(ctx, tx, "globex", 990)
	require.NoError(t, err)
	outboxtest.RequireEnqueued(t, tx, outboxtest.Match{AggregateType: invoices.AggregateType, AggregateID: inv.ID})
	require.NoError(t, tx.Rollback(ctx))
	outboxtest.RequireNotEnqueued(t, db, outboxtest.Match{AggregateType: invoices.AggregateType, AggregateID: inv.ID})
}

// openDB connects to DATABASE_URL with a small pool and migrates it.
func openDB(t *testing.T, ctx context.Context) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(env(t, "DATABASE_URL"))
	require.NoError(t, err)
	cfg.MaxConns = 4
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	require.NoError(t, invoices.Migrate(ctx, db))
	return db
}

func env(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	require.NotEmpty(t, v, "set %s", name)
	return v
}

// TestCleanup: retention deletes an event published longer ago than it
// (outboxtest.Force ages one), and nothing younger, nor the invoice.
func TestCleanup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db := openDB(t, ctx)
	inv, ev, err := invoices.Issue(ctx, db, "initech", 700)
	require.NoError(t, err)
	outboxtest.Force(t, db, outboxtest.Match{ID: ev.ID}, outboxtest.SetPublished(30*24*time.Hour))
	kept := outboxtest.Events(t, db, outboxtest.Match{AggregateType: invoices.AggregateType})

	ran, err := invoices.Cleanup(ctx, db, 7*24*time.Hour)
	require.NoError(t, err)
	require.True(t, ran, "no other process holds the cleanup lock")
	outboxtest.RequireNotEnqueued(t, db, outboxtest.Match{ID: ev.ID})
	require.Len(t, outboxtest.Events(t, db, outboxtest.Match{AggregateType: invoices.AggregateType}), len(kept)-1,
		"only the event published 30 days ago is deleted")
	var invoicesLeft int
	require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE id = $1`, inv.ID).Scan(&invoicesLeft))
	require.Equal(t, 1, invoicesLeft, "cleanup deletes the outbox's rows only")
}

// duplicates reads inbox_duplicates_total{consumer} from reg.
func duplicates(t *testing.T, reg *prometheus.Registry, consumer string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != inbox.DuplicatesMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == inbox.ConsumerLabel && l.GetValue() == consumer {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
