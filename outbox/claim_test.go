package outbox_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestClaimTakesOneLanePerAggregate: only the lowest unpublished sequence of
// an aggregate is claimable, a claimed event is invisible to other relays
// until its lease ends, and the successor becomes claimable after the mark.
func TestClaimTakesOneLanePerAggregate(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	a := testdb.Enqueue(t, b.pool, testdb.Event(t, "A", "One"), testdb.Event(t, "A", "Two"), testdb.Event(t, "A", "Three"))
	bEv := testdb.Enqueue(t, b.pool, testdb.Event(t, "B", "One"))

	r1 := b.newRelay(t, outbox.RelayConfig{Owner: "relay-1"})
	r2 := b.newRelay(t, outbox.RelayConfig{Owner: "relay-2"})
	got, _, err := r1.ClaimForTest(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []uuid.UUID{a[0].ID, bEv[0].ID}, ids(got), "one event per aggregate, the lowest sequence")
	for _, e := range got {
		r := readRow(t, b.pool, e.ID)
		require.Equal(t, "relay-1", *r.ClaimedBy)
		require.Equal(t, 1, r.Attempts, "attempts are counted at claim")
		require.NotNil(t, r.ClaimUntil)
	}

	require.Empty(t, claimIDs(t, r2), "leased events and their successors are not claimable")

	markOne(t, r1, a[0].ID)
	got, _, err = r2.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{a[1].ID}, ids(got), "the successor follows its published predecessor")
	require.Equal(t, int64(2), got[0].Sequence)
	require.JSONEq(t, string(a[1].Payload), string(got[0].Payload))
}

func TestClaimSkipsUnavailableQuarantinedAndSkipped(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	later := testdb.Enqueue(t, b.pool, testdb.Event(t, "later", "One"))
	poisoned := testdb.Enqueue(t, b.pool, testdb.Event(t, "poisoned", "One"), testdb.Event(t, "poisoned", "Two"))
	skipped := testdb.Enqueue(t, b.pool, testdb.Event(t, "skipped", "One"), testdb.Event(t, "skipped", "Two"))
	_, err := b.pool.Exec(ctx, `UPDATE outbox_events SET available_at = now() + interval '1 hour' WHERE event_id = $1`, later[0].ID)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE outbox_events SET quarantined_at = now() WHERE event_id = $1`, poisoned[0].ID)
	require.NoError(t, err)
	// An operator skip (outboxctl skip) lets the aggregate's later events
	// flow once its tombstone is out: the skipped event is claimed first, as
	// a tombstone (Event.Skipped), and its mark frees its successor.
	_, err = b.pool.Exec(ctx, `UPDATE outbox_events SET quarantined_at = now(), skipped_at = now(), skipped_by = 'ops', skip_reason = 'test' WHERE event_id = $1`, skipped[0].ID)
	require.NoError(t, err)

	r := b.newRelay(t, outbox.RelayConfig{})
	got, _, err := r.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{skipped[0].ID}, ids(got),
		"not before available_at; a quarantined event holds back its aggregate; a skipped one is claimed for its tombstone")
	require.True(t, got[0].Skipped)
	require.Empty(t, claimIDs(t, r), "the successor waits for the tombstone")
	markOne(t, r, skipped[0].ID)
	require.Nil(t, readRow(t, b.pool, skipped[0].ID).PublishedAt, "a skipped event is never published, its tombstone is")
	got, _, err = r.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{skipped[1].ID}, ids(got), "the skip's successor follows its tombstone")
	require.False(t, got[0].Skipped)
}

// TestLeaseFencing: relay A claims, its lease expires, relay B takes the event
// over. A's mark, failure record and release change nothing; B's mark wins.
func TestLeaseFencing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := testdb.Enqueue(t, b.pool, testdb.Event(t, "fenced", "One"))[0]
	regB := prometheus.NewRegistry()
	relayA := b.newRelay(t, outbox.RelayConfig{Owner: "relay-A"})
	relayB := b.newRelay(t, outbox.RelayConfig{Owner: "relay-B", Registerer: regB})

	got, tookOver, err := relayA.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{ev.ID}, ids(got))
	require.Equal(t, []bool{false}, tookOver)

	// A's lease runs out (moved into the past rather than waited for).
	expireLeases(t, b)
	got, tookOver, err = relayB.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{ev.ID}, ids(got), "an expired lease is claimable")
	require.Equal(t, []bool{true}, tookOver)
	require.InDelta(t, 1, promtest.Value(t, regB, "outbox_expired_leases_total"), 0)

	// A comes back from its stall: it cannot touch B's claim.
	n, err := relayA.MarkForTest(ctx, ev.ID)
	require.NoError(t, err)
	require.Zero(t, n, "A's mark is fenced")
	failed, err := relayA.FailForTest(ctx, ev.ID, "A's late failure")
	require.NoError(t, err)
	require.Zero(t, failed, "A's failure record is fenced")
	released, err := relayA.ReleaseForTest(ctx, ev.ID)
	require.NoError(t, err)
	require.Zero(t, released, "A's release is fenced")
	r := readRow(t, b.pool, ev.ID)
	require.Equal(t, "relay-B", *r.ClaimedBy)
	require.Nil(t, r.PublishedAt)
	require.Nil(t, r.LastError)
	require.Equal(t, 2, r.Attempts)
	require.True(t, r.ClaimUntil.After(time.Now().Add(-time.Second)))

	markOne(t, relayB, ev.ID, "B's mark wins")
	r = readRow(t, b.pool, ev.ID)
	require.NotNil(t, r.PublishedAt)
	require.Equal(t, "relay-B", *r.ClaimedBy)
	require.Nil(t, r.ClaimUntil)

	// A lease that expired with nobody taking over is still its owner's:
	// marking after the acknowledgement is right, not a conflict.
	ev2 := testdb.Enqueue(t, b.pool, testdb.Event(t, "slow", "One"))[0]
	require.Equal(t, []uuid.UUID{ev2.ID}, claimIDs(t, relayA))
	expireLeases(t, b)
	markOne(t, relayA, ev2.ID)
}

// TestClaimUsesPartialIndex shows the claim's plan on a table whose history
// (published rows) dwarfs its backlog: the planner reaches candidates through
// the partial dispatch index and checks predecessors through the partial lane
// index, never scanning outbox_events. The verification that follows the
// claim finds its events by primary key and probes their lanes through the
// lane index too. Both statements are explained as the relay sends them.
func TestClaimUsesPartialIndex(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	// 50,000 published events of 10,000 orders, then a backlog of 200 events
	// over 100 orders.
	_, err := b.pool.Exec(ctx, `
		INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type,
		                           schema_version, payload, occurred_at, available_at, published_at, attempt_count)
		SELECT gen_random_uuid(), 'order', 'hist-' || (g / 5), g % 5 + 1, 'OrderCreated', 1, '{}',
		       now() - interval '1 day', now() - interval '1 day', now() - interval '1 day', 1
		FROM generate_series(0, 49999) AS g`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `
		INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type,
		                           schema_version, payload)
		SELECT gen_random_uuid(), 'order', 'live-' || (g / 2), g % 2 + 1, 'OrderCreated', 1, '{}'
		FROM generate_series(0, 199) AS g`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `ANALYZE outbox_events`)
	require.NoError(t, err)

	r := b.newRelay(t, outbox.RelayConfig{Owner: "explain"})
	claimSQL, claimArgs := r.ClaimStatementForTest()
	indexes, seqScans := explain(t, b, "claim", claimSQL, claimArgs)
	require.Contains(t, indexes, "outbox_dispatch_idx", "candidates come from the partial dispatch index")
	require.Contains(t, indexes, "outbox_pending_lane_idx", "the predecessor check uses the partial lane index")
	require.NotContains(t, seqScans, "outbox_events")

	verifySQL, verifyArgs := r.VerifyStatementForTest(uuid.New(), uuid.New())
	indexes, seqScans = explain(t, b, "claim verification", verifySQL, verifyArgs)
	require.Contains(t, indexes, "outbox_events_pkey", "the claimed events are found by primary key")
	require.Contains(t, indexes, "outbox_pending_lane_idx", "the predecessor check and successor probe use the partial lane index")
	require.NotContains(t, seqScans, "outbox_events")
}

// explain logs the plan of sql with args and returns the indexes it uses and
// the relations it scans sequentially.
func explain(t *testing.T, b *testBundle, what, sql string, args []any) (indexes, seqScans []string) {
	t.Helper()
	ctx := context.Background()
	var plan []byte
	require.NoError(t, b.pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan))
	var doc []map[string]any
	require.NoError(t, json.Unmarshal(plan, &doc))
	walkPlan(doc[0]["Plan"].(map[string]any), func(node map[string]any) {
		if name, ok := node["Index Name"].(string); ok {
			indexes = append(indexes, name)
		}
		if node["Node Type"] == "Seq Scan" {
			seqScans = append(seqScans, node["Relation Name"].(string))
		}
	})
	rows, err := b.pool.Query(ctx, "EXPLAIN "+sql, args...)
	require.NoError(t, err)
	text, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	t.Logf("%s plan:\n%s", what, strings.Join(text, "\n"))
	return indexes, seqScans
}

func walkPlan(node map[string]any, visit func(map[string]any)) {
	visit(node)
	children, _ := node["Plans"].([]any)
	for _, c := range children {
		walkPlan(c.(map[string]any), visit)
	}
}

func expireLeases(t *testing.T, b *testBundle) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(),
		`UPDATE outbox_events SET claim_until = now() - interval '1 second' WHERE claim_until IS NOT NULL`)
	require.NoError(t, err)
}

func ids(events []outbox.Event) []uuid.UUID {
	out := make([]uuid.UUID, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}

// TestEventThatKillsItsRelaysIsQuarantined: an event whose publish crashes
// or stalls every relay that claims it never gets a failure recorded; once
// its attempts are used up by claims whose leases expired, the next claim
// quarantines it instead of handing it out again, and its aggregate waits.
func TestEventThatKillsItsRelaysIsQuarantined(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	evs := testdb.Enqueue(t, b.pool, testdb.Event(t, "deadly", "One"), testdb.Event(t, "deadly", "Two"))
	other := testdb.Enqueue(t, b.pool, testdb.Event(t, "fine", "One"))[0]
	r := b.newRelay(t, outbox.RelayConfig{Owner: "relay-crashy", MaxAttempts: 2, BatchSize: 1})

	for attempt := 1; attempt <= 2; attempt++ {
		require.Equal(t, []uuid.UUID{evs[0].ID}, claimIDs(t, r), "attempt %d", attempt)
		expireLeases(t, b) // the relay died holding it
	}
	require.Empty(t, claimIDs(t, r), "the batch slot went to quarantining the exhausted event")
	var quarantined bool
	var lastErr string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT quarantined_at IS NOT NULL, coalesce(last_error, '') FROM outbox_events WHERE event_id = $1`, evs[0].ID).
		Scan(&quarantined, &lastErr))
	require.True(t, quarantined)
	require.Contains(t, lastErr, "lost its lease")
	require.Equal(t, []uuid.UUID{other.ID}, claimIDs(t, r), "other aggregates flow; the quarantined one holds its successor back")
}

// TestClaimLeavesOutWhatTheRelayStillHolds: a relay whose own lease expired
// while the outcome of its publish was still to be written does not claim
// the event again (its pipeline passes what it holds); another relay may
// take it over, as after any expired lease.
func TestClaimLeavesOutWhatTheRelayStillHolds(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := testdb.Enqueue(t, b.pool, testdb.Event(t, "held", "Created"))[0]
	r := b.newRelay(t, outbox.RelayConfig{Owner: "relay-1", Lease: 100 * time.Millisecond, PublishTimeout: 50 * time.Millisecond})
	got, err := r.ClaimExceptForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{ev.ID}, ids(got))
	eventually(t, 5*time.Second, func() bool {
		row, err := queryRow(b.pool, ev.ID)
		return err == nil && row.ClaimUntil != nil && row.ClaimUntil.Before(time.Now().Add(-50*time.Millisecond))
	}, "the lease expires")
	got, err = r.ClaimExceptForTest(ctx, ev.ID)
	require.NoError(t, err)
	require.Empty(t, got, "the relay claimed again an event it still holds")
	other := b.newRelay(t, outbox.RelayConfig{Owner: "relay-2"})
	got, err = other.ClaimExceptForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{ev.ID}, ids(got), "another relay takes the expired lease over")
}
