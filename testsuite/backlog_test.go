package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/outboxbench"
)

// TestBacklogRecovery stops the relays, lets a backlog of 20,000 events build
// up (4,000 orders with 5 events each), then starts two relays: the backlog
// drains, every order's events are started in sequence order, and the claim
// stays on the partial indexes with bounded work per batch even at the
// backlog's peak. No worker runs: this is the relay's test, and the started
// workflows simply wait on their task queue.
//
// It runs alone (not parallel): 20,000 starts load the shared Temporal
// server for a couple of minutes.
func TestBacklogRecovery(t *testing.T) {
	const ordersN, perOrder = 4000, 5
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s := NewStack(t)

	// The claim's work with a small backlog, then at the peak: it must be
	// bounded by the batch (100 events), not grow with the backlog.
	buildBacklog(ctx, t, s, 200, perOrder)
	small := explainClaim(ctx, t, s)
	start := time.Now()
	buildBacklog(ctx, t, s, ordersN-200, perOrder)
	t.Logf("backlog of %d events built in %s", ordersN*perOrder, time.Since(start).Round(time.Millisecond))
	peak := explainClaim(ctx, t, s)
	// The choice of candidates never scans the table; at the peak nothing
	// does. (With a small backlog the planner may join the claimed rows to
	// a 1,000-row table by a sequential scan: cheaper there, and bounded.)
	for _, plan := range []claimPlan{small, peak} {
		require.NotContains(t, plan.candidates, `"Node Type": "Seq Scan"`, "choosing candidates must not scan the table")
		require.Contains(t, plan.candidates, "outbox_dispatch_idx")
	}
	require.NotContains(t, peak.text, `"Node Type": "Seq Scan"`, "at the peak the claim must not scan the table")
	t.Logf("claim of 100: %d buffers / %.1f ms with %d pending events, %d buffers / %.1f ms with %d",
		small.buffers, small.ms, 200*perOrder, peak.buffers, peak.ms, ordersN*perOrder)
	// Linear work would be 20x; allow for one more index level and heap
	// pages, not for the backlog.
	require.Less(t, float64(peak.buffers), 2.5*float64(small.buffers),
		"a claim at a 20x larger backlog must touch about the same number of buffers")

	start = time.Now()
	s.Start("starter", "")
	s.Start("starter-2", "")
	require.NoError(t, WaitPublished(ctx, s, 12*time.Minute))
	drain := time.Since(start)
	t.Logf("backlog drained by two relays in %s (%.0f events/s)", drain.Round(time.Millisecond), float64(ordersN*perOrder)/drain.Seconds())

	requireLanesInOrder(ctx, t, s)
}

// requireLanesInOrder checks that no event was published before its
// predecessor, in the table and, for a sample of orders, in Temporal's own
// record: start times follow the sequence.
func requireLanesInOrder(ctx context.Context, t *testing.T, s *Stack) {
	t.Helper()
	outOfOrder, err := qPublishedOutOfOrder.Value(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
	require.Zero(t, outOfOrder, "an event was published before its predecessor")
	require.Equal(t, 20, requireStartsInOrder(ctx, t, s, 20))
}

// requireStartsInOrder checks, in Temporal's own record, that the workflows
// of up to n orders' events started in sequence order, and returns how many
// orders it checked.
func requireStartsInOrder(ctx context.Context, t *testing.T, s *Stack, n int) int {
	t.Helper()
	lanes, err := qSampleLanes.All(ctx, s.Pool, sampleLanesArgs{Lanes: n})
	require.NoError(t, err)
	for _, ids := range lanes {
		var prev time.Time
		for i, id := range ids {
			d, err := s.Env.Client.DescribeWorkflow(ctx, id, "")
			require.NoError(t, err, "invariant 3: workflow %s", id)
			st := d.RawResponse.GetWorkflowExecutionInfo().GetStartTime().AsTime()
			require.False(t, st.Before(prev), "event %d of its order started before its predecessor", i+1)
			prev = st
		}
	}
	return len(lanes)
}

// backlogEvents is the cdc backlog test's size: 2,000 events in `make test`,
// OUTFLOW_BACKLOG_EVENTS (a multiple of 500) for the 20,000.
func backlogEvents(t *testing.T) int {
	if v := os.Getenv("OUTFLOW_BACKLOG_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "OUTFLOW_BACKLOG_EVENTS")
		require.Zero(t, n%500, "OUTFLOW_BACKLOG_EVENTS must be a multiple of 500")
		return n
	}
	return 2000
}

// TestBacklogRecoveryCDC: the cdc source after an outage. Its slot exists
// (a cdc starter ran once), then a backlog builds while no relay runs and
// the slot's lag grows; two cdc starters then backfill and stream it: every
// event is published in order per order, and the slot's lag recovers (its
// confirmed position passes the whole backlog).
func TestBacklogRecoveryCDC(t *testing.T) {
	const perOrder = 5
	events := backlogEvents(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s := NewCDCStack(t)
	s.Start("starter", "")
	// A slot being created is listed before it is consistent (no confirmed
	// position yet: creation waits for the server's running transactions),
	// and a stop then drops it; wait for the made slot.
	require.Eventually(t, func() bool {
		st, ok, err := outboxops.Slot(ctx, s.Pool, s.Slot)
		return err == nil && ok && st.ConfirmedFlushLSN != "0/0"
	}, time.Minute, 50*time.Millisecond, "the first cdc starter creates the slot")
	s.Proc("starter").Stop(10 * time.Second)

	start := time.Now()
	buildBacklog(ctx, t, s, events/perOrder, perOrder)
	var end string
	require.NoError(t, s.Pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&end))
	before, ok, err := outboxops.Slot(ctx, s.Pool, s.Slot)
	require.NoError(t, err)
	require.True(t, ok, "the slot the first starter made is kept")
	t.Logf("backlog of %d events built in %s; slot lag %d bytes", events, time.Since(start).Round(time.Millisecond), before.LagBytes)
	require.Positive(t, before.LagBytes)

	start = time.Now()
	s.Start("starter", "")
	s.Start("starter-2", "")
	require.NoError(t, WaitPublished(ctx, s, 12*time.Minute))
	drain := time.Since(start)
	require.Eventually(t, func() bool {
		var passed bool
		err := s.Pool.QueryRow(ctx, `SELECT confirmed_flush_lsn >= $2::pg_lsn FROM pg_replication_slots WHERE slot_name = $1`, s.Slot, end).Scan(&passed)
		return err == nil && passed
	}, 2*time.Minute, 100*time.Millisecond, "the slot's position passes the backlog")
	// And its lag recovers: the relay's marks are WAL too, which the
	// publication does not stream; the position passes them as the server
	// reports it has sent them.
	var after outboxops.SlotStatus
	require.Eventually(t, func() bool {
		var err error
		after, _, err = outboxops.Slot(ctx, s.Pool, s.Slot)
		return err == nil && after.LagBytes < 1<<20
	}, 2*time.Minute, 200*time.Millisecond, "the slot's lag recovers (under 1 MiB)")
	t.Logf("cdc backlog drained in %s (%.0f events/s); slot lag %d -> %d bytes",
		drain.Round(time.Millisecond), float64(events)/drain.Seconds(), before.LagBytes, after.LagBytes)
	requireLanesInOrder(ctx, t, s)
}

// TestBacklogRecoveryLog: the log source after an outage. A backlog builds
// in the log (the producers' enqueue with OUTFLOW_RELAY_SOURCE=log) while no
// relay runs; two log starters then drain it (the first takes every
// partition, the second stands by): every event is published, in sequence
// per order in Temporal's own record, no order is left under a hold, and
// the relays wrote nothing per event (the log's rows are never updated: its
// dead row versions stay at none).
func TestBacklogRecoveryLog(t *testing.T) {
	const perOrder = 5
	events := backlogEvents(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	s := NewLogStack(t)
	start := time.Now()
	buildBacklogWith(ctx, t, s, events/perOrder, perOrder, logEnqueuer.Enqueue)
	t.Logf("backlog of %d log events built in %s", events, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	s.Start("starter", "")
	s.Start("starter-2", "")
	require.NoError(t, WaitPublished(ctx, s, 12*time.Minute))
	drain := time.Since(start)
	t.Logf("log backlog drained by two relays in %s (%.0f events/s)", drain.Round(time.Millisecond), float64(events)/drain.Seconds())

	c, err := qLogBacklogFacts.One(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
	require.Equal(t, int64(events), c.LogEvents, "every event of the backlog is in the log")
	require.Zero(t, c.OutboxEvents, "nothing went to outbox_events")
	require.Zero(t, c.Holds, "no order is left under a hold")
	require.Zero(t, c.LogUpdates, "the log's rows are inserted, never updated or deleted")
	require.Equal(t, 20, requireStartsInOrder(ctx, t, s, 20))
}

// logEnqueuer is the producers' enqueue with OUTFLOW_RELAY_SOURCE=log.
var logEnqueuer = outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true})

// buildBacklog enqueues n orders' events, perOrder each (an OrderCreated
// then OrderCancelled events), 100 orders a transaction.
func buildBacklog(ctx context.Context, t *testing.T, s *Stack, n, perOrder int) {
	t.Helper()
	buildBacklogWith(ctx, t, s, n, perOrder, outbox.Enqueue)
}

// buildBacklogWith is [buildBacklog] through enqueue.
func buildBacklogWith(ctx context.Context, t *testing.T, s *Stack, n, perOrder int,
	enqueue func(context.Context, pgx.Tx, ...outbox.Event) ([]outbox.Event, error)) {
	t.Helper()
	for done := 0; done < n; done += 100 {
		err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
			var events []outbox.Event
			for range 100 {
				orderID := uuid.NewString()
				created := uuid.Must(uuid.NewV7())
				payload, _ := json.Marshal(orders.OrderCreated{OrderID: orderID, CustomerEmail: "b@example.com", Currency: "usd",
					PaymentMethod: "pm_card_visa", Amount: 2500, Items: []orders.Item{{SKU: "SKU-1", Quantity: 1, UnitAmount: 2500}}})
				events = append(events, outbox.Event{ID: created, AggregateType: orders.AggregateType, AggregateID: orderID,
					Type: orders.EventOrderCreated, SchemaVersion: orders.OrderCreatedVersion, Payload: payload})
				for range perOrder - 1 {
					payload, _ := json.Marshal(orders.OrderCancelled{OrderID: orderID, CreatedEventID: created.String()})
					events = append(events, outbox.Event{AggregateType: orders.AggregateType, AggregateID: orderID,
						Type: orders.EventOrderCancelled, SchemaVersion: orders.OrderCancelledVersion, Payload: payload})
				}
			}
			_, err := enqueue(ctx, tx, events...)
			return err
		})
		require.NoError(t, err)
	}
}

type claimPlan struct {
	text string
	// candidates is the plan of the claim's CTE that chooses the events.
	candidates string
	buffers    int
	ms         float64
}

// subplan returns the JSON of the plan node named name (e.g. "CTE
// candidates") under node, or "" when there is none.
func subplan(node map[string]any, name string) string {
	if node["Subplan Name"] == name {
		b, _ := json.Marshal(node)
		return string(b)
	}
	children, _ := node["Plans"].([]any)
	for _, c := range children {
		if child, ok := c.(map[string]any); ok {
			if found := subplan(child, name); found != "" {
				return found
			}
		}
	}
	return ""
}

// explainClaim runs the relay's own claim statement (RelayClaim, through
// outbox/outboxtest/outboxbench, bound exactly as the relay binds it) under EXPLAIN
// ANALYZE in a transaction it rolls back.
func explainClaim(ctx context.Context, t *testing.T, s *Stack) claimPlan {
	t.Helper()
	tx, err := s.Pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = tx.Exec(ctx, "ANALYZE outbox_events")
	require.NoError(t, err)
	rows, err := outboxbench.Claim(ctx, explaining{tx}, outboxbench.ClaimArgs{
		Owner: "explain", BatchSize: 100, Lease: 30 * time.Second, MaxAttempts: 20})
	require.NoError(t, err)
	raw, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[[]byte])
	require.NoError(t, err)
	var out []map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	top := out[0]["Plan"].(map[string]any)
	buffers := int(top["Shared Hit Blocks"].(float64) + top["Shared Read Blocks"].(float64))
	candidates := subplan(top, "CTE candidates")
	require.NotEmpty(t, candidates, "the claim's plan has no CTE candidates")
	return claimPlan{text: string(raw), candidates: candidates, buffers: buffers, ms: out[0]["Execution Time"].(float64)}
}

// explaining runs every query it is given under EXPLAIN ANALYZE.
type explaining struct{ pgx.Tx }

func (e explaining) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return e.Tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+sql, args...)
}

// WaitPublished waits until no event is left unpublished.
func WaitPublished(ctx context.Context, s *Stack, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		p, err := qProgress.One(ctx, s.Pool, namedsql.NoArgs{})
		if err != nil {
			return err
		}
		if p.Unpublished == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d events still unpublished after %s", p.Unpublished, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
