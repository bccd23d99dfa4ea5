package testsuite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
)

// TestTemporalOutage: with the real binaries, Temporal is unreachable from
// the relay (a network partition: its connection is cut, the same on a dev
// server and on the cluster) for longer than the whole backoff schedule of
// OUTFLOW_MAX_ATTEMPTS=3 (ceilings 1 s, 2 s, 4 s) while orders are placed.
// Every start fails for Temporal's fault: no attempt is counted, nothing is
// quarantined, the relay stops claiming and probes. After the partition
// heals every order's events are started in per-order order and every order
// settles; an unroutable event committed during the outage is still
// quarantined after recovery, its own fault.
func TestTemporalOutage(t *testing.T) { temporalOutage(t, "poll") }

// TestTemporalOutageCDC is [TestTemporalOutage] with the cdc source.
func TestTemporalOutageCDC(t *testing.T) { temporalOutage(t, "cdc") }

func temporalOutage(t *testing.T, source string) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	env := SharedEnv(t)
	s := NewStackWith(t, env, StackOptions{Source: source})
	s.Start("orderapi", "")
	s.Start("worker", "")
	cut := NewPartition(t, env.Temporal.Address())
	s.RelayEnv = []string{"OUTFLOW_MAX_ATTEMPTS=3", "TEMPORAL_ADDRESS=" + cut.Addr()}
	starter := s.Start("starter", "")
	api := s.API()

	cut.Cut()
	const n = 5
	var placed []string
	for i := range n {
		o, err := api.Create(ctx, fmt.Sprintf("outage-%d-%s", i, uuid.NewString()), "pm_card_visa")
		require.NoError(t, err)
		placed = append(placed, o.OrderID)
	}
	require.NoError(t, api.Cancel(ctx, placed[0]))
	ev, err := outbox.NewEvent("shipment", "zzz-poison-"+uuid.NewString()[:8], "OrderTeleported", 1, map[string]string{})
	require.NoError(t, err)
	var poison outbox.Event
	require.NoError(t, pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		written, err := outbox.Enqueue(ctx, tx, ev)
		if err == nil {
			poison = written[0]
		}
		return err
	}))
	require.NoError(t, starter.WaitLog(ctx, "the sink is unavailable"), "the relay's breaker opens")

	// The outage lasts well beyond the backoff schedule of three attempts
	// (at most 7 s in all); meanwhile nothing uses attempts.
	outageEnd := time.Now().Add(12 * time.Second)
	for time.Now().Before(outageEnd) {
		var used, quarantined int
		for _, e := range outboxtest.Events(t, s.Pool, outboxtest.Match{}) {
			if e.Attempts > 0 && e.ClaimUntil == nil {
				used++
			}
			if e.QuarantinedAt != nil {
				quarantined++
			}
		}
		require.Zero(t, used, "attempts used up by Temporal's outage")
		require.Zero(t, quarantined, "events quarantined for Temporal's outage")
		time.Sleep(500 * time.Millisecond)
	}
	require.NoError(t, cut.Heal())
	require.NoError(t, starter.WaitLog(ctx, "the sink answers again"), "the relay's breaker closes")

	require.NoError(t, WaitStatus(ctx, s, placed[0], "cancelled", 3*time.Minute))
	for _, id := range placed[1:] {
		require.NoError(t, WaitStatus(ctx, s, id, "confirmed", 3*time.Minute))
	}
	outboxtest.WaitFor(t, s.Pool, outboxtest.Match{ID: poison.ID}, time.Minute, outboxtest.AllQuarantined,
		"the unroutable event is quarantined after recovery: its own fault")
	var healthyQuarantined, maxAttempts int
	for _, e := range outboxtest.Events(t, s.Pool, outboxtest.Match{}) {
		if e.ID == poison.ID {
			continue
		}
		if e.QuarantinedAt != nil {
			healthyQuarantined++
		}
		maxAttempts = max(maxAttempts, e.Attempts)
	}
	require.Zero(t, healthyQuarantined)
	require.LessOrEqual(t, maxAttempts, 1, "a healthy event used attempts")
	require.Equal(t, n, requireStartsInOrder(ctx, t, s, n), "every order's starts in order in Temporal's record")

	// The poison event is the test's probe, not an order's (skip settles an
	// order's projection, so it refuses one without an order): remove it,
	// then check the four invariants over the orders.
	require.EqualValues(t, 1, outboxtest.DeleteEvents(t, s.Pool, outboxtest.Match{ID: poison.ID}))
	// The last email may trail an order's final status by a step:
	// assertRecovered re-checks the invariants within a bounded window.
	assertRecovered(ctx, t, s)
}
