package testsuite

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/failpoints"
	"github.com/outflow/outflow/internal/namedsql"
)

// crashCase is one row of the failpoint matrix: which process carries the
// failpoint, and how the test drives the stack into it.
type crashCase struct {
	failpoint string
	process   string // "orderapi", "starter", "worker" or "orderfeed"
	// source is the starters' OUTFLOW_RELAY_SOURCE; "" is poll.
	source string
	// jetstream: the starters publish to both sinks (temporal,jetstream)
	// and cmd/orderfeed consumes the stream; the invariants are checked at
	// its table too.
	jetstream bool
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
		// The JetStream sink's points, with both sinks and the stream's
		// consumer running.
		{failpoint: failpoints.JetStreamAfterAck, process: "starter", jetstream: true},
		{failpoint: failpoints.JetStreamConsumerAfterCommit, process: "orderfeed", jetstream: true},
	}
	covered := map[string]bool{failpoints.OrdersBeforeCommit: true, failpoints.OrdersAfterCommit: true}
	for _, c := range cases {
		covered[c.failpoint] = true
	}
	// cleanup.mid_batch is exercised by the cleanup tests of outboxctl, which
	// owns the cleanup loop; every other failpoint must have a row here.
	covered[failpoints.CleanupMidBatch] = true
	// inventory.after_commit is the inventory service's (cmd/inventory),
	// whose own test crashes it there.
	covered[failpoints.InventoryAfterCommit] = true
	// webhook.after_commit is the order API's, whose process test
	// (cmd/orderapi) crashes it there and has Stripe's redelivery absorbed.
	covered[failpoints.WebhookAfterCommit] = true
	for _, name := range failpoints.Names {
		require.True(t, covered[name], "failpoint %s has no crash test", name)
	}

	for _, c := range cases {
		t.Run(c.failpoint, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			s := NewStack(t)
			if c.source == "cdc" {
				s = NewCDCStack(t)
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

// TestOrderAPICrashBeforeCommit: the API dies with the order and its event
// written but not committed. Nothing may remain, and the client's retry
// creates the order once.
func TestOrderAPICrashBeforeCommit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := NewStack(t)
	s.Start("starter", "")
	s.Start("worker", "")
	api := s.Start("orderapi", failpoints.OrdersBeforeCommit+"=crash")

	key := "crash-before-" + uuid.NewString()
	_, _, err := s.API().CreateOnce(ctx, key, "pm_card_visa")
	require.Error(t, err, "the API died before answering")
	require.NoError(t, api.WaitKilled(ctx))
	c, err := qCounts.One(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
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
	s := NewStack(t)
	s.Start("starter", "")
	s.Start("worker", "")
	api := s.Start("orderapi", failpoints.OrdersAfterCommit+"=crash")

	key := "crash-after-" + uuid.NewString()
	_, _, err := s.API().CreateOnce(ctx, key, "pm_card_visa")
	require.Error(t, err, "the API died before answering")
	require.NoError(t, api.WaitKilled(ctx))
	c, err := qCounts.One(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
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

// assertRecovered waits for the stack to drain and checks every invariant.
func assertRecovered(ctx context.Context, t *testing.T, s *Stack) {
	t.Helper()
	require.NoError(t, WaitDrained(ctx, s.Pool, 3*time.Minute))
	var rep Report
	var err error
	// The last email may trail the final status by one step; re-check
	// within a bounded window before declaring a violation.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ledger, lerr := s.Env.SimClient().Ledger(ctx)
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
}
