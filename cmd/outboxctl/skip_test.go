package main

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ctltest"
)

// TestSkip: only a quarantined event can be skipped; the skip records the
// reason and the actor (given, or $USER@hostname), and the aggregate's later
// events flow again through a running relay, without the skipped one.
func TestSkip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	evs := b.Enqueue(t, order(t, b), "OrderCreated", "OrderCancelled")
	dflt := b.Enqueue(t, order(t, b), "OrderCreated")[0]

	r := b.Ctl(t, "skip", evs[0].ID.String(), "--reason", "bad payload", "--yes")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "it is pending, not quarantined")

	b.Quarantine(t, evs[0].ID, "payload fails validation")
	b.Quarantine(t, dflt.ID, "payload fails validation")
	rec := b.RunRelay(t)
	r = b.OK(t, "skip", evs[0].ID.String(), "--reason", "SKU deleted; refunded by hand (OPS-42)", "--actor", "ada", "--yes")
	require.Contains(t, r.Stdout, "skipped "+evs[0].ID.String())
	require.Contains(t, r.Stderr, "event skipped")
	row := b.Row(t, evs[0].ID)
	require.NotNil(t, row.SkippedAt)
	require.Equal(t, "ada", row.SkippedBy)
	require.Equal(t, "SKU deleted; refunded by hand (OPS-42)", row.SkipReason)

	b.WaitPublished(t, evs[1].ID)
	for _, e := range rec.Events() {
		require.NotEqual(t, evs[0].ID, e.ID, "a skipped event is never published")
	}
	require.Nil(t, b.Row(t, evs[0].ID).PublishedAt)

	b.OK(t, "skip", dflt.ID.String(), "--reason", "duplicate order", "--yes")
	require.Regexp(t, `^.+@.+$`, b.Row(t, dflt.ID).SkippedBy, "actor defaults to $USER@hostname")

	r = b.Ctl(t, "skip", evs[0].ID.String(), "--reason", "again", "--yes")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "already skipped by ada")
}

// TestSkipSettlesOrderSequence: skipping an order's event closes its place in
// the order's projected sequence in the skip's own transaction, so the
// order's later events (the cancel behind it) are not stalled forever; and
// when the order cannot be settled, the skip does not happen either.
func TestSkipSettlesOrderSequence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created, err := orders.CreateOrder(b.Ctx, b.Pool, orders.CreateOrderParams{CustomerEmail: "ada@example.com", Currency: "usd",
		PaymentMethod: "pm_card_visa", Items: []orders.Item{{SKU: "SKU-1", Quantity: 1, UnitAmount: 2500}}})
	require.NoError(t, err)
	orderID := created.OrderID.String()
	stray := b.Enqueue(t, orderID, "OrderAudited")[0]
	require.EqualValues(t, 2, stray.Sequence)
	_, err = orders.CancelOrder(b.Ctx, b.Pool, created.OrderID)
	require.NoError(t, err)
	// The payment saga's final step has applied sequence 1.
	b.Exec(t, `UPDATE orders SET status = 'payment_failed', applied_sequence = 1 WHERE id = $1`, orderID)
	b.Quarantine(t, stray.ID, "no workflow for OrderAudited")

	b.OK(t, "skip", stray.ID.String(), "--reason", "no workflow takes OrderAudited", "--actor", "ada", "--yes")
	var applied int64
	require.NoError(t, b.Pool.QueryRow(b.Ctx, `SELECT applied_sequence FROM orders WHERE id = $1`, orderID).Scan(&applied))
	require.EqualValues(t, 2, applied, "the cancel (3) is next")
	var skipped []int64
	require.NoError(t, b.Pool.QueryRow(b.Ctx, `SELECT skipped_sequences FROM orders WHERE id = $1`, orderID).Scan(&skipped))
	require.Equal(t, []int64{2}, skipped)

	// An order event without its order cannot be settled: the skip is
	// refused and rolled back with it.
	orphan := b.Enqueue(t, uuid.NewString(), "OrderCreated")[0]
	b.Quarantine(t, orphan.ID, "order row is gone")
	r := b.Ctl(t, "skip", orphan.ID.String(), "--reason", "orphan", "--actor", "ada", "--yes")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "order not found")
	row := b.Row(t, orphan.ID)
	require.Nil(t, row.SkippedAt, "the skip rolled back with the failed settle")
	require.NotNil(t, row.QuarantinedAt)
}

// order inserts an order row and returns its id, the aggregate id of its
// events: a skip settles the order's projected sequence, so an order event
// needs its order.
func order(t *testing.T, b *ctltest.Bundle) string {
	t.Helper()
	id := uuid.NewString()
	b.Exec(t, `INSERT INTO orders (id, customer_email, currency, payment_method, amount, items, created_event_id)
		VALUES ($1, 'ada@example.com', 'usd', 'pm_card_visa', 2500, '[]', $2)`, id, uuid.New())
	return id
}
