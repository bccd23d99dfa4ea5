package workflows

import (
	"context"
	"testing"
	"time"

	"github.com/outflow/outflow/internal/routes"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// v1 and v2 OrderCreated events processed side by side, end to end: the
// order service writes one order without and one with a shipping address
// (v1 and v2 events), the real relay validates and starts both, the real
// worker confirms both against the provider simulator, and only the v2 run
// takes the shipping-address path. An event of a version no worker knows
// is quarantined by the relay, never started.
func TestOrderCreatedV1AndV2SideBySide(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := devserver.Start(t, devserver.Options{})
	c := srv.Client()
	tq := "side-by-side-" + uuid.NewString()
	st := startStackOn(t, c, tq)
	pool, sim := st.pool, st.sim

	pub, err := temporalpub.New(c, srv.ClientOptions(""), temporalpub.Config{TaskQueue: tq, Routes: routes.Orders()})
	require.NoError(t, err)
	outboxtest.RunRelay(t, pool, &outboxtest.Recorder{Answer: pub.Publish}, outbox.RelayConfig{PollInterval: 200 * time.Millisecond})

	params := orders.CreateOrderParams{CustomerEmail: "ada@example.com", Currency: "eur", PaymentMethod: "pm_card_visa",
		Items: []orders.Item{{SKU: "SKU-1", Quantity: 2, UnitAmount: 1250}}}
	v1, err := orders.CreateOrder(ctx, pool, params)
	require.NoError(t, err)
	params.ShippingAddress = &orders.ShippingAddress{Name: "Ada Lovelace", Line1: "Unter den Linden 1",
		City: "Berlin", PostalCode: "10117", Country: "DE"}
	v2, err := orders.CreateOrder(ctx, pool, params)
	require.NoError(t, err)

	// A v3 OrderCreated from a producer ahead of the workers.
	future := uuid.NewString()
	ev, err := outbox.NewEvent(orders.AggregateType, future, orders.EventOrderCreated, 3, map[string]any{"order_id": future})
	require.NoError(t, err)
	testdb.Enqueue(t, pool, ev)

	outboxtest.WaitFor(t, pool, outboxtest.Match{AggregateID: future}, time.Minute, outboxtest.AllQuarantined, "the v3 event quarantined")
	require.Eventually(t, func() bool {
		var confirmed int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM orders WHERE id = ANY($1) AND status = 'confirmed'`,
			[]uuid.UUID{v1.OrderID, v2.OrderID}).Scan(&confirmed)
		return err == nil && confirmed == 2
	}, time.Minute, 100*time.Millisecond, "both orders confirmed")

	for _, tc := range []struct {
		res     orders.CreateOrderResult
		version int
		shipsTo string
	}{{v1, orders.OrderCreatedV1, ""}, {v2, orders.OrderCreatedV2, "DE"}} {
		require.Equal(t, tc.version, outboxtest.RequireEnqueued(t, pool, outboxtest.Match{ID: tc.res.EventID}).SchemaVersion)

		desc, err := c.DescribeWorkflow(ctx, tc.res.EventID.String(), "")
		require.NoError(t, err)
		var shipsTo string
		if p, ok := desc.Memo.GetFields()[MemoShipsTo]; ok {
			require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &shipsTo))
		}
		require.Equal(t, tc.shipsTo, shipsTo, "only the v2 run takes the shipping-address path")

		var kinds []string
		for _, e := range sim.Ledger().Emails {
			if e.Tags[activities.TagOrderID] == tc.res.OrderID.String() {
				kinds = append(kinds, e.Tags[activities.TagKind])
			}
		}
		require.Equal(t, []string{"confirmation"}, kinds)
	}

	quarantined := outboxtest.RequireEnqueued(t, pool, outboxtest.Match{AggregateID: future})
	require.Contains(t, quarantined.LastError, "schema version 3 is not supported")
}
