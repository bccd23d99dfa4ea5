package outbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
)

// TestReplayRepublishesTheWindowFlaggedAsReplays: published events in the
// window become unpublished, available, with attempts reset and the replay
// flag; the relay hands them to the publisher with Event.Replay set, and the
// mark clears the flag. Events outside the window or of another aggregate,
// and unpublished ones, are untouched.
func TestReplayRepublishesTheWindowFlaggedAsReplays(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	inWindow := enqueue(t, b.pool, mustEvent(t, "r", "One"), mustEvent(t, "r", "Two"))
	otherAgg := enqueue(t, b.pool, mustEvent(t, "x", "One"))[0]
	old := enqueue(t, b.pool, mustEvent(t, "old", "One"))[0]
	_, err := b.pool.Exec(ctx, `UPDATE outbox_events SET occurred_at = now() - interval '2 days' WHERE event_id = $1`, old.ID)
	require.NoError(t, err)

	relay := b.newRelay(t, outbox.RelayConfig{PollInterval: 50 * time.Millisecond})
	stop := run(t, relay)
	all := append(append([]outbox.Event{}, inWindow...), otherAgg, old)
	eventually(t, 10*time.Second, func() bool { return published(b.pool, ids(all)...) }, "first delivery")
	stop()
	pending := enqueue(t, b.pool, mustEvent(t, "r", "Three"))[0] // unpublished: not a replay

	win := outbox.ReplayOptions{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), AggregateType: "order", AggregateID: "r"}
	plan, err := outbox.PlanReplay(ctx, b.pool, win)
	require.NoError(t, err)
	require.Equal(t, int64(2), plan.Events)
	n, err := outbox.Replay(ctx, b.pool, win)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	for _, e := range inWindow {
		r := readRow(t, b.pool, e.ID)
		require.Nil(t, r.PublishedAt)
		require.Zero(t, r.Attempts)
		require.Nil(t, r.ClaimedBy)
	}
	require.True(t, published(b.pool, otherAgg.ID, old.ID), "other aggregates and older events are untouched")
	st, err := outbox.Status(ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, int64(2), st.Replaying)
	require.Less(t, st.OldestPendingAge, time.Hour, "a replay's age counts from its request")

	b.rec.mu.Lock()
	b.rec.acked = nil
	b.rec.mu.Unlock()
	run(t, b.newRelay(t, outbox.RelayConfig{PollInterval: 50 * time.Millisecond}))
	eventually(t, 10*time.Second, func() bool { return published(b.pool, inWindow[0].ID, inWindow[1].ID, pending.ID) }, "replayed and republished")
	b.rec.mu.Lock()
	defer b.rec.mu.Unlock()
	require.Len(t, b.rec.acked, 3)
	for i, e := range b.rec.acked {
		require.Equal(t, int64(i+1), e.Sequence, "the aggregate's order is kept")
		require.Equal(t, e.ID != pending.ID, e.Replay, "Event.Replay is set on replayed events only")
	}
	var flagged int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox_events WHERE replay_requested_at IS NOT NULL`).Scan(&flagged))
	require.Zero(t, flagged, "the mark clears the replay flag")
}

// TestReplayRefusesBadWindows: a window that is empty, inverted, or reaches
// before the cleanup horizon is refused.
func TestReplayRefusesBadWindows(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	now := time.Now()
	_, err := outbox.Replay(ctx, b.pool, outbox.ReplayOptions{From: now, To: now.Add(-time.Minute)})
	require.ErrorIs(t, err, outbox.ErrReplayWindow)
	_, err = outbox.Replay(ctx, b.pool, outbox.ReplayOptions{To: now})
	require.ErrorIs(t, err, outbox.ErrReplayWindow)
	_, err = outbox.PlanReplay(ctx, b.pool, outbox.ReplayOptions{From: now.Add(-time.Hour), To: now, AggregateID: "o-1"})
	require.ErrorIs(t, err, outbox.ErrReplayWindow, "an aggregate ID without its type is ambiguous")
	require.ErrorContains(t, err, "AggregateType")

	_, err = outbox.Cleanup(ctx, b.pool, outbox.CleanupOptions{Retention: 24 * time.Hour})
	require.NoError(t, err)
	h, err := outbox.CleanupHorizon(ctx, b.pool)
	require.NoError(t, err)
	require.NotNil(t, h)
	_, err = outbox.Replay(ctx, b.pool, outbox.ReplayOptions{From: now.Add(-48 * time.Hour), To: now})
	require.ErrorIs(t, err, outbox.ErrReplayWindow)
	require.ErrorContains(t, err, "cleanup horizon")
	n, err := outbox.Replay(ctx, b.pool, outbox.ReplayOptions{From: h.Add(time.Second), To: now})
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestReplayKeepsOneEventInFlightPerAggregate: a replay makes an earlier
// event of an order unpublished again while a relay is publishing a later
// one; no relay may claim the replayed event until that publish is done.
func TestReplayKeepsOneEventInFlightPerAggregate(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	evs := enqueue(t, b.pool, mustEvent(t, "lane", "One"), mustEvent(t, "lane", "Two"))
	r1 := b.newRelay(t, outbox.RelayConfig{Owner: "relay-1"})
	r2 := b.newRelay(t, outbox.RelayConfig{Owner: "relay-2"})

	got, _, err := r1.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{evs[0].ID}, ids(got))
	n, err := r1.MarkForTest(ctx, evs[0].ID)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got, _, err = r1.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{evs[1].ID}, ids(got), "r1 is publishing the second event")

	replayed, err := outbox.Replay(ctx, b.pool, outbox.ReplayOptions{
		From: evs[0].OccurredAt.Add(-time.Minute), To: time.Now().Add(time.Minute), AggregateType: "order", AggregateID: "lane"})
	require.NoError(t, err)
	require.Equal(t, int64(1), replayed)

	got, _, err = r2.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Empty(t, got, "the lane is busy with the second event")
	n, err = r1.MarkForTest(ctx, evs[1].ID)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got, _, err = r2.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{evs[0].ID}, ids(got), "then the replayed event goes")
	require.True(t, got[0].Replay)
}

// TestReplayWaitsForAClaimInFlight is the replay ordering guard under READ
// COMMITTED: relay A's claim of an order's second event is still
// uncommitted (its statement saw the first event published) when an
// operator replays the first event. Relay B must not take the replayed event
// while A holds the second: the replay waits for A's claim to commit, and
// from then on A's lease holds the replayed event back until A is done.
func TestReplayWaitsForAClaimInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	evs := enqueue(t, b.pool, mustEvent(t, "race", "One"), mustEvent(t, "race", "Two"))
	rA := b.newRelay(t, outbox.RelayConfig{Owner: "relay-a"})
	rB := b.newRelay(t, outbox.RelayConfig{Owner: "relay-b"})
	got, _, err := rA.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{evs[0].ID}, ids(got))
	n, err := rA.MarkForTest(ctx, evs[0].ID)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	txA, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer txA.Rollback(ctx) //nolint:errcheck // a no-op once committed
	got, err = rA.ClaimInTxForTest(ctx, txA)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{evs[1].ID}, ids(got), "A holds the second event, uncommitted")

	type result struct {
		n   int64
		err error
	}
	replayed := make(chan result, 1)
	go func() {
		n, err := outbox.Replay(ctx, b.pool, outbox.ReplayOptions{
			From: evs[0].OccurredAt.Add(-time.Minute), To: time.Now().Add(time.Minute),
			AggregateType: "order", AggregateID: "race"})
		replayed <- result{n, err}
	}()
	// Whichever comes first: the replay committed without waiting for A, or
	// it waits on a lock (A's row lock on the second event).
	var res *result
	deadline := time.Now().Add(10 * time.Second)
	for res == nil && !waitsOnLock(t, b) {
		select {
		case r := <-replayed:
			res = &r
		case <-time.After(10 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the replay neither finished nor waited on a lock within 10s")
	}
	got, _, err = rB.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Empty(t, ids(got), "B must not take the replayed first event while A holds the second")
	require.Nil(t, res, "the replay waits for A's claim to commit")

	require.NoError(t, txA.Commit(ctx))
	if res == nil {
		select {
		case r := <-replayed:
			res = &r
		case <-time.After(10 * time.Second):
			t.Fatal("the replay did not finish within 10s of A's commit")
		}
	}
	require.NoError(t, res.err)
	require.Equal(t, int64(1), res.n)
	got, _, err = rB.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Empty(t, ids(got), "A's lease on the second event holds the replayed first one back")

	n, err = rA.MarkForTest(ctx, evs[1].ID)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got, _, err = rB.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{evs[0].ID}, ids(got), "once A is done, the replayed event goes")
	require.True(t, got[0].Replay)
}

// waitsOnLock reports whether a session of b's database waits on a lock.
func waitsOnLock(t *testing.T, b *testBundle) bool {
	t.Helper()
	var waiting bool
	require.NoError(t, b.pool.QueryRow(context.Background(), `
		SELECT EXISTS (SELECT 1 FROM pg_stat_activity
		               WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting))
	return waiting
}

// TestClaimVerificationGivesBackWhatAReplayOvertook covers the claim that
// locks a successor only after a replay of its predecessor committed: its
// statement's snapshot predates the replay, so RelayClaim takes the
// successor. That interleaving cannot be forced under READ COMMITTED (SKIP
// LOCKED never waits, so nothing can hold the statement between its
// snapshot and its row lock); a REPEATABLE READ transaction whose snapshot
// was taken before the replay gives the claim the same stale view.
// RelayClaimVerify, which the relay runs in the claim's transaction with a
// fresh READ COMMITTED snapshot, gives the successor back. The same holds
// for a replayed event claimed without seeing its successor's lease.
func TestClaimVerificationGivesBackWhatAReplayOvertook(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	evs := enqueue(t, b.pool, mustEvent(t, "stale", "One"), mustEvent(t, "stale", "Two"))
	rA := b.newRelay(t, outbox.RelayConfig{Owner: "relay-a"})
	rB := b.newRelay(t, outbox.RelayConfig{Owner: "relay-b"})
	got, _, err := rA.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{evs[0].ID}, ids(got))
	n, err := rA.MarkForTest(ctx, evs[0].ID)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	staleClaim := func(r *outbox.Relay, between func()) []uuid.UUID {
		t.Helper()
		tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		require.NoError(t, err)
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op once committed
		// The transaction's snapshot is taken here, before between().
		_, err = tx.Exec(ctx, "SELECT 1")
		require.NoError(t, err)
		between()
		got, err := r.ClaimInTxForTest(ctx, tx)
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
		return ids(got)
	}
	verify := func(r *outbox.Relay, ids ...uuid.UUID) []uuid.UUID {
		t.Helper()
		var released []uuid.UUID
		require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			var err error
			released, err = r.VerifyClaimInTxForTest(ctx, tx, ids...)
			return err
		}))
		return released
	}
	window := outbox.ReplayOptions{From: evs[0].OccurredAt.Add(-time.Minute), To: time.Now().Add(time.Minute),
		AggregateType: "order", AggregateID: "stale"}

	claimedA := staleClaim(rA, func() {
		n, err := outbox.Replay(ctx, b.pool, window)
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
	})
	require.Equal(t, []uuid.UUID{evs[1].ID}, claimedA, "the stale snapshot still sees the first event published")
	require.Equal(t, []uuid.UUID{evs[1].ID}, verify(rA, claimedA...), "a fresh snapshot sees the replayed predecessor")
	r := readRow(t, b.pool, evs[1].ID)
	require.Nil(t, r.ClaimedBy)
	require.Nil(t, r.ClaimUntil)
	require.Zero(t, r.Attempts, "the attempt counted at claim is returned")

	// The replayed event, claimed from a snapshot that misses a lease on its
	// successor (written here by hand: no claim could take the successor
	// while its predecessor is unpublished).
	claimedB := staleClaim(rB, func() {
		_, err := b.pool.Exec(ctx, `UPDATE outbox_events SET claimed_by = 'relay-a', claim_until = now() + interval '1 minute'
			WHERE event_id = $1`, evs[1].ID)
		require.NoError(t, err)
	})
	require.Equal(t, []uuid.UUID{evs[0].ID}, claimedB)
	require.Equal(t, []uuid.UUID{evs[0].ID}, verify(rB, claimedB...), "a fresh snapshot sees the successor's lease")
	require.Nil(t, readRow(t, b.pool, evs[0].ID).ClaimedBy)
}

// TestReplayFiltersOnAggregateType: an aggregate ID is unique only within
// its type, so a replay of one aggregate leaves another type's aggregate of
// the same ID alone; a type alone selects every aggregate of that type.
func TestReplayFiltersOnAggregateType(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	customer, err := outbox.NewEvent("customer", "same", "CustomerCreated", 1, map[string]string{"id": "same"})
	require.NoError(t, err)
	order := enqueue(t, b.pool, mustEvent(t, "same", "OrderCreated"))[0]
	other := enqueue(t, b.pool, mustEvent(t, "other", "OrderCreated"))[0]
	cust := enqueue(t, b.pool, customer)[0]
	_, err = b.pool.Exec(ctx, `UPDATE outbox_events SET published_at = now()`)
	require.NoError(t, err)
	win := outbox.ReplayOptions{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)}

	one := win
	one.AggregateType, one.AggregateID = "order", "same"
	plan, err := outbox.PlanReplay(ctx, b.pool, one)
	require.NoError(t, err)
	require.Equal(t, int64(1), plan.Events)
	n, err := outbox.Replay(ctx, b.pool, one)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Nil(t, readRow(t, b.pool, order.ID).PublishedAt)
	require.True(t, published(b.pool, other.ID, cust.ID), "the customer of the same ID is not replayed")

	customers := win
	customers.AggregateType = "customer"
	n, err = outbox.Replay(ctx, b.pool, customers)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Nil(t, readRow(t, b.pool, cust.ID).PublishedAt)
	require.True(t, published(b.pool, other.ID))
}

// TestReplayRefusesWindowsBeforeTheReplayHorizon: once the starter has
// recorded how long Temporal keeps closed workflows, a window reaching
// further back is refused with the horizon, its reason and the earliest
// start allowed; a later recording replaces the earlier one.
func TestReplayRefusesWindowsBeforeTheReplayHorizon(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := enqueue(t, b.pool, mustEvent(t, "h", "One"))[0]
	_, err := b.pool.Exec(ctx, `UPDATE outbox_events SET published_at = now(), occurred_at = now() - interval '30 hours' WHERE event_id = $1`, ev.ID)
	require.NoError(t, err)
	old := outbox.ReplayOptions{From: time.Now().Add(-31 * time.Hour), To: time.Now()}

	h, reason, err := outbox.ReplayHorizon(ctx, b.pool)
	require.NoError(t, err)
	require.Zero(t, h, "never recorded")
	require.Empty(t, reason)
	plan, err := outbox.PlanReplay(ctx, b.pool, old)
	require.NoError(t, err, "without a replay horizon only the cleanup horizon limits a replay")
	require.Equal(t, int64(1), plan.Events)

	require.Error(t, outbox.RecordReplayHorizon(ctx, b.pool, 0, "zero"))
	require.Error(t, outbox.RecordReplayHorizon(ctx, b.pool, time.Hour, " "))
	require.NoError(t, outbox.RecordReplayHorizon(ctx, b.pool, 72*time.Hour, "an older retention"))
	const why = `Temporal namespace "default" keeps closed workflows 24h0m0s`
	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		return outbox.RecordReplayHorizonTx(ctx, tx, 24*time.Hour, why)
	}))
	h, reason, err = outbox.ReplayHorizon(ctx, b.pool)
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, h, "the latest recording wins")
	require.Equal(t, why, reason)

	_, err = outbox.PlanReplay(ctx, b.pool, old)
	requireBeyondHorizon(t, err, why)
	_, err = outbox.Replay(ctx, b.pool, old)
	requireBeyondHorizon(t, err, why)
	require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		_, err := outbox.ReplayTx(ctx, tx, old)
		requireBeyondHorizon(t, err, why)
		return nil
	}))
	require.True(t, published(b.pool, ev.ID), "nothing was replayed")

	recent := outbox.ReplayOptions{From: time.Now().Add(-23 * time.Hour), To: time.Now()}
	_, err = outbox.Replay(ctx, b.pool, recent)
	require.NoError(t, err, "a window within the horizon is allowed")
}

// requireBeyondHorizon checks a refusal of a window older than a 24h replay
// horizon recorded with reason.
func requireBeyondHorizon(t *testing.T, err error, reason string) {
	t.Helper()
	require.ErrorIs(t, err, outbox.ErrReplayWindow)
	require.ErrorContains(t, err, "replay horizon of 24h0m0s")
	require.ErrorContains(t, err, reason)
	_, after, ok := strings.Cut(err.Error(), "start the window at or after ")
	require.True(t, ok, "the message names the earliest start allowed: %v", err)
	earliest, perr := time.Parse(time.RFC3339Nano, after)
	require.NoError(t, perr)
	require.WithinDuration(t, time.Now().Add(-24*time.Hour), earliest, time.Minute)
}
