package testsuite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/providersim"
)

// crashCase is one row of the failpoint matrix: which process carries the
// failpoint, and how the test drives the stack into it.
type crashCase struct {
	failpoint string
	process   string // "orderapi", "starter", "worker", "orderfeed" or "inventory"
	// source is the stack's OUTFLOW_RELAY_SOURCE; "" is poll.
	source string
	// jetstream: the starters publish to both sinks (temporal,jetstream)
	// and cmd/orderfeed consumes the stream; the invariants are checked at
	// its table too.
	jetstream bool
	// run, when set, is the row's own scenario, for a failpoint the
	// order mix cannot reach (the inventory's, the webhooks'): it builds
	// its stack, crashes the process, restarts it and checks the
	// invariants itself.
	run func(ctx context.Context, t *testing.T)
	// name is the subtest's name when the failpoint has another row
	// already ("" is the failpoint's name).
	name string
}

// TestFailpointMatrix crashes one process at each failpoint of docs/reference.md
// once, restarts it clean, lets the stack recover and asserts the four
// invariants and the provider ledger.
func TestFailpointMatrix(t *testing.T) {
	t.Parallel()
	cases := []crashCase{
		{failpoint: failpoints.RelayAfterClaim, process: "starter"},
		{failpoint: failpoints.RelayAfterPublish, process: "starter"},
		{failpoint: failpoints.RelayBeforeMarkCommit, process: "starter"},
		{failpoint: failpoints.ActivityPaymentAfterProvider, process: "worker"},
		{failpoint: failpoints.ActivityRefundAfterProvider, process: "worker"},
		{failpoint: failpoints.ActivityEmailAfterProvider, process: "worker"},
		{failpoint: failpoints.ConsumerAfterCommit, process: "worker"},
		// The CDC source's points, with the stack on a wal_level=logical server.
		{failpoint: failpoints.CDCAfterReceive, process: "starter", source: "cdc"},
		{failpoint: failpoints.CDCAfterPublish, process: "starter", source: "cdc"},
		{failpoint: failpoints.CDCBeforeConfirm, process: "starter", source: "cdc"},
		// The log source's points: the order API writes to the log, the
		// starter's partition reader dies after reading a batch, or with
		// the batch published before its cursor moved.
		{failpoint: failpoints.LogAfterRead, process: "starter", source: "log"},
		{failpoint: failpoints.LogBeforeAdvance, process: "starter", source: "log"},
		// The JetStream sink's points, with both sinks and the stream's
		// consumer running.
		{failpoint: failpoints.JetStreamAfterAck, process: "starter", jetstream: true},
		{failpoint: failpoints.JetStreamConsumerAfterCommit, process: "orderfeed", jetstream: true},
		// The boundaries of the inventory service (its own database) and
		// of the webhooks into the order API, each with its own stack.
		{failpoint: failpoints.InventoryAfterCommit, process: "inventory", run: crashInventoryAfterCommit},
		{failpoint: failpoints.WebhookAfterCommit, process: "orderapi", run: crashWebhookAfterCommit},
		// A signal route's ACK gap: the inventory's relay dies after
		// Temporal accepted the StockReserved signal, before the mark.
		{failpoint: failpoints.RelayAfterPublish, process: "inventory", run: crashInventorySignalBeforeMark,
			name: "inventory:" + failpoints.RelayAfterPublish},
	}
	covered := map[string]bool{failpoints.OrdersBeforeCommit: true, failpoints.OrdersAfterCommit: true}
	for _, c := range cases {
		covered[c.failpoint] = true
	}
	// cleanup.mid_batch is exercised by the cleanup tests of outboxctl, which
	// owns the cleanup loop; every other failpoint must have a row here.
	covered[failpoints.CleanupMidBatch] = true
	for _, name := range failpoints.Names {
		require.True(t, covered[name], "failpoint %s has no crash test", name)
	}

	for _, c := range cases {
		name := c.failpoint
		if c.name != "" {
			name = c.name
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if c.run != nil {
				c.run(ctx, t)
				return
			}
			s := NewStack(t)
			switch c.source {
			case "cdc":
				s = NewCDCStack(t)
			case "log":
				s = NewLogStack(t)
			}
			names := []string{"orderapi", "starter", "worker"}
			if c.jetstream {
				s.UseJetStream(JetStreamURLDefault)
				names = append(names, "orderfeed")
			}
			for _, name := range names {
				fp := ""
				if name == c.process {
					fp = c.failpoint + "=crash"
				}
				s.Start(name, fp)
			}
			mix := make(chan error, 1)
			go func() { mix <- PlaceMix(ctx, s) }()

			victim := s.Proc(c.process)
			require.NoError(t, victim.WaitKilled(ctx), "the failpoint must be reached and crash the process")
			s.Start(c.process, "")
			require.NoError(t, <-mix)
			assertRecovered(ctx, t, s)
			if c.jetstream {
				n, err := WaitFeed(ctx, s.Pool, time.Minute)
				require.NoError(t, err, "the invariants at the stream's consumer")
				t.Logf("consumer: %d orders, each event applied once and in order", n)
			}
		})
	}
}

// crashInventoryAfterCommit is the inventory.after_commit row: the saga's
// reserve reaches the inventory service (cmd/inventory, its own database),
// which commits the reservation, its event and its answer and dies before
// answering. The worker's retry with the same Idempotency-Key, against the
// restarted service, gets the stored answer: the order is confirmed once,
// the stock held once, and the invariants hold on both databases.
func crashInventoryAfterCommit(ctx context.Context, t *testing.T) {
	r := startInventoryRow(ctx, t, failpoints.InventoryAfterCommit)
	order, err := r.s.API().Create(ctx, "inv-crash-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, r.s.Proc("inventory").WaitKilled(ctx), "the reserve must reach the failpoint and crash the inventory")
	res, err := qInventoryReservations.All(ctx, r.db, namedsql.NoArgs{})
	require.NoError(t, err)
	require.Equal(t, []inventoryReservation{{OrderID: order.OrderID, Status: "reserved", ReservedEvents: 1, Held: 2}}, res,
		"invariant 1: the reservation committed with its one event before the crash")
	stock, err := qInventoryStock.All(ctx, r.db, namedsql.NoArgs{})
	require.NoError(t, err)
	require.Equal(t, []inventoryStock{{SKU: "SKU-1", Available: 1, Reserved: 2, Held: 2}}, stock)

	r.s.Start("inventory", "")
	r.assertRecovered(ctx, t, order.OrderID, time.Minute, "the worker's retry gets the stored answer")
}

// crashInventorySignalBeforeMark is the signal route's row: the inventory
// service answers the saga's reserve, its relay signals StockReserved to the
// order's saga and dies (relay.after_publish) before marking the event
// published. The restarted service's relay takes the event over once the
// lease ran out and signals it again; the saga's receiver drops the second
// delivery by the event's id: the order is confirmed once, the stock held
// once, the event published once, and the invariants hold on both
// databases.
func crashInventorySignalBeforeMark(ctx context.Context, t *testing.T) {
	r := startInventoryRow(ctx, t, failpoints.RelayAfterPublish)
	order, err := r.s.API().Create(ctx, "inv-signal-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, r.s.Proc("inventory").WaitKilled(ctx), "the relay must signal the saga and crash before its mark")
	r.s.Start("inventory", "")
	// The event is published once the restarted relay took it over.
	r.assertRecovered(ctx, t, order.OrderID, 2*time.Minute, "the saga had its answer")
}

// inventoryRow is the stack of an inventory row: the order stack and the
// inventory service (its own database, db), holding 3 of SKU-1.
type inventoryRow struct {
	s   *Stack
	inv inventoryClient
	db  *pgxpool.Pool
}

// startInventoryRow starts an inventory row's stack, the inventory service
// crashing at fp.
func startInventoryRow(ctx context.Context, t *testing.T, fp string) inventoryRow {
	t.Helper()
	s := NewStack(t)
	inv, invURL := startInventoryStack(t, s, fp+"=crash")
	r := inventoryRow{s: s, inv: inv, db: testdb.Open(t, invURL)}
	inv.setStock(ctx, t, "SKU-1", 3) // a test order is two of SKU-1
	return r
}

// assertRecovered: the order is confirmed (why), its stock reserved once, and
// the invariants hold on the inventory's database within the given time (one
// reservation, one StockReserved) and on the order stack's.
func (r inventoryRow) assertRecovered(ctx context.Context, t *testing.T, orderID string, within time.Duration, why string) {
	t.Helper()
	require.NoError(t, WaitStatus(ctx, r.s, orderID, "confirmed", 2*time.Minute), why)
	require.Equal(t, "reserved", r.inv.reservation(ctx, t, orderID))
	require.Equal(t, stockLevels{Available: 1, Reserved: 2}, r.inv.stock(ctx, t, "SKU-1"), "reserved once")
	rep, err := WaitInventory(ctx, r.db, r.s.Pool, map[string]int64{"SKU-1": 3}, within)
	require.NoError(t, err, "the invariants on the inventory's database")
	t.Logf("inventory: %s", rep)
	require.Equal(t, InventoryReport{Events: 1, Reservations: 1, Reserved: 1}, rep, "one reservation, one StockReserved")
	assertRecovered(ctx, t, r.s)
}

// crashWebhookAfterCommit is the webhook.after_commit row: the simulator's
// first webhook about a processing charge (payment_intent.processing)
// reaches the order API, which commits its inbox row and event and dies
// before its 200. The simulator retries the delivery against the restarted
// API, whose inbox absorbs it; the charge's success webhook then confirms
// the order, once, and the invariants hold.
func crashWebhookAfterCommit(ctx context.Context, t *testing.T) {
	s := NewStack(t)
	sim := startWebhookStack(ctx, t, s, failpoints.WebhookAfterCommit+"=crash")

	order, err := s.API().Create(ctx, "webhook-crash-"+uuid.NewString(), "pm_sim_processing")
	require.NoError(t, err)
	require.NoError(t, s.Proc("orderapi").WaitKilled(ctx), "the processing webhook must reach the failpoint and crash the API")
	wh, err := qWebhookFacts.One(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
	require.Equal(t, int64(1), wh.InboxRows, "the webhook's inbox row committed before the crash")
	require.Equal(t, int64(1), wh.Events, "invariant 1: with its one event")

	s.Start("orderapi", "")
	var hooks []providersim.WebhookDelivery
	require.Eventually(t, func() bool {
		hooks, err = sim.Webhooks(ctx)
		return err == nil && len(hooks) == 1 && hooks[0].Delivered
	}, time.Minute, 200*time.Millisecond, "the simulator's retry is answered 2xx")
	require.Greater(t, hooks[0].Attempts, 1, "the first attempt died with the API")
	wh, err = qWebhookFacts.One(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
	require.Equal(t, int64(1), wh.InboxRows, "the retry is absorbed by the inbox")
	require.Equal(t, int64(1), wh.Events, "and writes no second event")

	l, err := sim.Ledger(ctx)
	require.NoError(t, err)
	var piID string
	for _, pi := range l.PaymentIntents {
		if pi.Metadata["order_id"] == order.OrderID {
			piID = pi.ID
		}
	}
	require.NotEmpty(t, piID, "the charge reached the simulator")
	require.NoError(t, sim.Settle(ctx, piID, providersim.OutcomeSucceeded))
	require.NoError(t, WaitStatus(ctx, s, order.OrderID, "confirmed", 2*time.Minute))
	wh, err = qWebhookFacts.One(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
	require.Equal(t, int64(2), wh.InboxRows, "one inbox row per Stripe event")
	require.Equal(t, int64(2), wh.Events, "one event per Stripe event")
	rep := assertRecoveredOn(ctx, t, s, sim)
	require.Equal(t, 1, rep.Orders)
	require.Equal(t, 1, rep.Confirmed, "the order changed once: confirmed")
}

// TestOrderAPICrashBeforeCommit: the API dies with the order and its event
// written but not committed. Nothing may remain, and the client's retry
// creates the order once.
func TestOrderAPICrashBeforeCommit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, key, c := crashOrderAPI(ctx, t, failpoints.OrdersBeforeCommit, "crash-before-")
	require.Zero(t, c.Orders, "invariant 2: an uncommitted order must not exist")
	require.Zero(t, c.Events, "invariant 2: an uncommitted change has no event")

	s.Start("orderapi", "")
	created, err := s.API().Create(ctx, key, "pm_card_visa")
	require.NoError(t, err)
	require.False(t, created.Replayed, "nothing was committed, so the retry is a first execution")
	assertRecovered(ctx, t, s)
}

// TestOrderAPICrashAfterCommit: the API dies after COMMIT, before answering.
// The order and its event exist exactly once, and the client's retry with the
// same Idempotency-Key gets the stored response, not a second order.
func TestOrderAPICrashAfterCommit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s, key, c := crashOrderAPI(ctx, t, failpoints.OrdersAfterCommit, "crash-after-")
	require.Equal(t, int64(1), c.Orders, "invariant 1: the committed order survives the crash")
	require.Equal(t, int64(1), c.Events, "invariant 1: with exactly one event")

	s.Start("orderapi", "")
	created, err := s.API().Create(ctx, key, "pm_card_visa")
	require.NoError(t, err)
	require.True(t, created.Replayed, "the retry must replay the stored response")
	c, err = qCounts.One(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
	require.Equal(t, int64(1), c.Orders, "the retry must not create a second order")
	assertRecovered(ctx, t, s)
}

// crashOrderAPI starts a stack whose order API crashes at fp, sends it one
// order under a new key (keyPrefix and a UUID), which it dies answering, and
// returns the stack, the key and the rows the crash left.
func crashOrderAPI(ctx context.Context, t *testing.T, fp, keyPrefix string) (*Stack, string, countsRow) {
	t.Helper()
	s := NewStack(t)
	s.Start("starter", "")
	s.Start("worker", "")
	api := s.Start("orderapi", fp+"=crash")

	key := keyPrefix + uuid.NewString()
	_, _, err := s.API().CreateOnce(ctx, key, "pm_card_visa")
	require.Error(t, err, "the API died before answering")
	require.NoError(t, api.WaitKilled(ctx))
	c, err := qCounts.One(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
	return s, key, c
}

// assertRecovered waits for the stack to drain and checks every invariant,
// against the ledger of the shared simulator.
func assertRecovered(ctx context.Context, t *testing.T, s *Stack) {
	t.Helper()
	assertRecoveredOn(ctx, t, s, s.Env.SimClient())
}

// assertRecoveredOn is [assertRecovered] against the ledger of sim, for a
// stack charging through a simulator of its own. It returns the report.
func assertRecoveredOn(ctx context.Context, t *testing.T, s *Stack, sim *providersim.Client) Report {
	t.Helper()
	require.NoError(t, WaitDrained(ctx, s.Pool, 3*time.Minute))
	var rep Report
	var err error
	// The last email may trail the final status by one step; re-check
	// within a bounded window before declaring a violation.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ledger, lerr := sim.Ledger(ctx)
		require.NoError(t, lerr)
		rep, err = CheckInvariants(ctx, s.Pool, s.Env.Client, ledger)
		if err == nil || time.Now().After(deadline) || errors.Is(err, context.Canceled) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	require.NoError(t, err)
	t.Logf("recovered: %s", rep)
	require.NotZero(t, rep.Orders)
	return rep
}
