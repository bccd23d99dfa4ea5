package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ctltest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// setupOutboxOnly is a database that holds the outbox's tables and none of
// the order app's, as a team's own service has it: an empty database
// migrated by outbox.Migrate alone.
func setupOutboxOnly(t *testing.T) *ctltest.Bundle {
	t.Helper()
	url := testdb.NewEmptyURL(t)
	pool := testdb.Open(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	require.NoError(t, outbox.Migrate(ctx, pool))
	b := &ctltest.Bundle{Ctx: ctx, Pool: pool, URL: url, Main: run}
	missing, err := missingTables(b.Ctx, b.Pool, "orders", "outbox_events", "processed_events")
	require.NoError(t, err)
	require.Equal(t, []string{"orders"}, missing, "the outbox's tables, none of the order app's")
	return b
}

// TestOutboxOnlyDatabase: on a database without the order app, every
// command that concerns the outbox works on a team's own aggregates
// (invoices, and purchase orders the team happens to call "order"); skip
// settles no order projection there and says so; forget-customer, the
// order app's, refuses with a message that says why. Filters assume no
// aggregate type.
func TestOutboxOnlyDatabase(t *testing.T) {
	t.Parallel()
	b := setupOutboxOnly(t)
	issued := b.EnqueueTyped(t, "invoice", "inv-1", "InvoiceIssued")
	voided := b.EnqueueTyped(t, "invoice", "inv-1", "InvoiceVoided")
	stray := b.EnqueueTyped(t, "invoice", "inv-2", "InvoiceIssued")
	theirs := b.EnqueueTyped(t, "order", "po-7", "PurchaseOrderPlaced")

	r := b.OK(t, "status")
	require.Regexp(t, `pending\s+4\s`, r.Stdout)
	r = b.OK(t, "status", "--json")
	require.Contains(t, r.Stdout, `"pending": 4`)

	r = b.OK(t, "list", "--aggregate", "inv-1")
	require.Equal(t, 2, strings.Count(r.Stdout, "invoice/inv-1"), r.Stdout)
	require.True(t, strings.HasPrefix(r.Stdout, issued.ID.String()), "in sequence order: %s", r.Stdout)
	r = b.OK(t, "list", "--aggregate-type", "order")
	require.Contains(t, r.Stdout, theirs.ID.String())
	require.NotContains(t, r.Stdout, "invoice/")
	r = b.OK(t, "list")
	require.Equal(t, 4, strings.Count(r.Stdout, "\n"), "every type unless one is asked for: %s", r.Stdout)

	b.Quarantine(t, stray.ID, "no workflow for InvoiceIssued")
	r = b.OK(t, "retry", stray.ID.String(), "--yes")
	require.Contains(t, r.Stdout, "retried "+stray.ID.String())
	require.Nil(t, b.Row(t, stray.ID).QuarantinedAt)
	b.Quarantine(t, stray.ID, "no workflow for InvoiceIssued")
	b.Quarantine(t, theirs.ID, "no workflow for PurchaseOrderPlaced")
	r = b.OK(t, "retry", "--quarantined", "--aggregate-type", "invoice", "--yes")
	require.Contains(t, r.Stdout, "retried 1 quarantined events")
	require.Nil(t, b.Row(t, stray.ID).QuarantinedAt)
	require.NotNil(t, b.Row(t, theirs.ID).QuarantinedAt, "only the invoice was selected")

	b.Quarantine(t, stray.ID, "no workflow for InvoiceIssued")
	r = b.OK(t, "skip", stray.ID.String(), "--reason", "issued twice by a bug; voided by hand (BILL-9)", "--yes")
	require.Contains(t, r.Stdout, "skipped "+stray.ID.String())
	require.NotContains(t, r.Stdout, "projection", "an invoice has no order projection")
	r = b.OK(t, "skip", theirs.ID.String(), "--reason", "superseded by po-8", "--yes")
	require.Contains(t, r.Stdout, "skipped "+theirs.ID.String())
	require.Contains(t, r.Stdout, "no order projection settled: this database has no orders table (the order app is not here)")
	require.NotNil(t, b.Row(t, theirs.ID).SkippedAt)

	for _, id := range ctltest.IDs(issued, voided) {
		outboxtest.Force(t, b.Pool, outboxtest.Match{ID: id}, outboxtest.SetPublished(0))
	}
	from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	to := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r = b.OK(t, "replay", "--from", from, "--to", to, "--aggregate", "inv-1", "--yes")
	require.Contains(t, r.Stdout, "aggregate inv-1 is of type invoice, the only type with an aggregate of that id")
	require.Contains(t, r.Stdout, "replayed 2 events")
	require.NotNil(t, b.Row(t, issued.ID).ReplayRequestedAt)

	for _, id := range ctltest.IDs(issued, voided) { // the replay delivered ten days ago
		outboxtest.Force(t, b.Pool, outboxtest.Match{ID: id}, outboxtest.SetPublished(10*24*time.Hour), outboxtest.SetOccurred(11*24*time.Hour))
	}
	r = b.OK(t, "cleanup", "--retention", "168h", "--yes")
	require.Contains(t, r.Stdout, "deleted 2 events published before")
	require.Empty(t, outboxtest.Events(t, b.Pool, outboxtest.Match{AggregateID: "inv-1"}))

	r = b.Ctl(t, "forget-customer", "ada@example.com", "--reason", "GDPR art. 17 request, ticket PRIV-7", "--yes")
	require.Equal(t, 1, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "nothing was forgotten: forget-customer erases the data key of a customer of the order app, and this database has no order app (no table customer_key_erasures, customer_keys, orders)")

	var help, errb strings.Builder
	for _, args := range [][]string{{"help"}, {"help", "skip"}, {"help", "forget-customer"}} {
		require.Equal(t, 0, run(b.Ctx, args, &help, &errb), errb.String())
	}
	require.Contains(t, help.String(), "order app only: erase one customer's data key")
	require.Contains(t, help.String(), "An event of aggregate type order, in a database with the order app's orders table, also settles")
	require.Contains(t, help.String(), "Order app only: erases the data key")
}
