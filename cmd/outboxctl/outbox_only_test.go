package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// setupOutboxOnly is a database that holds the outbox's tables and none of
// the order app's, as a team's own service has it: an empty database
// migrated by outbox.Migrate alone.
func setupOutboxOnly(t *testing.T) *testBundle {
	t.Helper()
	url := testdb.NewEmptyURL(t)
	pool := testdb.Open(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	require.NoError(t, outbox.Migrate(ctx, pool))
	b := &testBundle{ctx: ctx, pool: pool, url: url}
	missing, err := missingTables(b.ctx, b.pool, "orders", "outbox_events", "processed_events")
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
	issued := b.enqueueTyped(t, "invoice", "inv-1", "InvoiceIssued")
	voided := b.enqueueTyped(t, "invoice", "inv-1", "InvoiceVoided")
	stray := b.enqueueTyped(t, "invoice", "inv-2", "InvoiceIssued")
	theirs := b.enqueueTyped(t, "order", "po-7", "PurchaseOrderPlaced")

	r := b.ok(t, "status")
	require.Regexp(t, `pending\s+4\s`, r.stdout)
	r = b.ok(t, "status", "--json")
	require.Contains(t, r.stdout, `"pending": 4`)

	r = b.ok(t, "list", "--aggregate", "inv-1")
	require.Equal(t, 2, strings.Count(r.stdout, "invoice/inv-1"), r.stdout)
	require.True(t, strings.HasPrefix(r.stdout, issued.ID.String()), "in sequence order: %s", r.stdout)
	r = b.ok(t, "list", "--aggregate-type", "order")
	require.Contains(t, r.stdout, theirs.ID.String())
	require.NotContains(t, r.stdout, "invoice/")
	r = b.ok(t, "list")
	require.Equal(t, 4, strings.Count(r.stdout, "\n"), "every type unless one is asked for: %s", r.stdout)

	b.quarantine(t, stray.ID, "no workflow for InvoiceIssued")
	r = b.ok(t, "retry", stray.ID.String(), "--yes")
	require.Contains(t, r.stdout, "retried "+stray.ID.String())
	require.Nil(t, b.row(t, stray.ID).QuarantinedAt)
	b.quarantine(t, stray.ID, "no workflow for InvoiceIssued")
	b.quarantine(t, theirs.ID, "no workflow for PurchaseOrderPlaced")
	r = b.ok(t, "retry", "--quarantined", "--aggregate-type", "invoice", "--yes")
	require.Contains(t, r.stdout, "retried 1 quarantined events")
	require.Nil(t, b.row(t, stray.ID).QuarantinedAt)
	require.NotNil(t, b.row(t, theirs.ID).QuarantinedAt, "only the invoice was selected")

	b.quarantine(t, stray.ID, "no workflow for InvoiceIssued")
	r = b.ok(t, "skip", stray.ID.String(), "--reason", "issued twice by a bug; voided by hand (BILL-9)", "--yes")
	require.Contains(t, r.stdout, "skipped "+stray.ID.String())
	require.NotContains(t, r.stdout, "projection", "an invoice has no order projection")
	r = b.ok(t, "skip", theirs.ID.String(), "--reason", "superseded by po-8", "--yes")
	require.Contains(t, r.stdout, "skipped "+theirs.ID.String())
	require.Contains(t, r.stdout, "no order projection settled: this database has no orders table (the order app is not here)")
	require.NotNil(t, b.row(t, theirs.ID).SkippedAt)

	for _, id := range idsOf(issued, voided) {
		outboxtest.Force(t, b.pool, outboxtest.Match{ID: id}, outboxtest.SetPublished(0))
	}
	from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	to := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r = b.ok(t, "replay", "--from", from, "--to", to, "--aggregate", "inv-1", "--yes")
	require.Contains(t, r.stdout, "aggregate inv-1 is of type invoice, the only type with an aggregate of that id")
	require.Contains(t, r.stdout, "replayed 2 events")
	require.NotNil(t, b.row(t, issued.ID).ReplayRequestedAt)

	for _, id := range idsOf(issued, voided) { // the replay delivered ten days ago
		outboxtest.Force(t, b.pool, outboxtest.Match{ID: id}, outboxtest.SetPublished(10*24*time.Hour), outboxtest.SetOccurred(11*24*time.Hour))
	}
	r = b.ok(t, "cleanup", "--retention", "168h", "--yes")
	require.Contains(t, r.stdout, "deleted 2 events published before")
	require.Empty(t, outboxtest.Events(t, b.pool, outboxtest.Match{AggregateID: "inv-1"}))

	r = b.ctl(t, "forget-customer", "ada@example.com", "--reason", "GDPR art. 17 request, ticket PRIV-7", "--yes")
	require.Equal(t, 1, r.code, r.stderr)
	require.Contains(t, r.stderr, "nothing was forgotten: forget-customer erases the data key of a customer of the order app, and this database has no order app (no table customer_key_erasures, customer_keys, orders)")

	var help, errb strings.Builder
	for _, args := range [][]string{{"help"}, {"help", "skip"}, {"help", "forget-customer"}} {
		require.Equal(t, 0, run(b.ctx, args, &help, &errb), errb.String())
	}
	require.Contains(t, help.String(), "order app only: erase one customer's data key")
	require.Contains(t, help.String(), "An event of aggregate type order, in a database with the order app's orders table, also settles")
	require.Contains(t, help.String(), "Order app only: erases the data key")
}
