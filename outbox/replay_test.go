package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// The operator's replay against the relay's claim: the fence between them,
// statement by statement (the replay's own tests are in outbox/outboxops;
// these need the relay's statement hooks).

// TestReplayKeepsOneEventInFlightPerAggregate: a replay makes an earlier
// event of an order unpublished again while a relay is publishing a later
// one; no relay may claim the replayed event until that publish is done.
func TestReplayKeepsOneEventInFlightPerAggregate(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	evs := testdb.Enqueue(t, b.pool, testdb.Event(t, "lane", "One"), testdb.Event(t, "lane", "Two"))
	r1 := b.newRelay(t, outbox.RelayConfig{Owner: "relay-1"})
	r2 := b.newRelay(t, outbox.RelayConfig{Owner: "relay-2"})

	require.Equal(t, []uuid.UUID{evs[0].ID}, claimIDs(t, r1))
	markOne(t, r1, evs[0].ID)
	require.Equal(t, []uuid.UUID{evs[1].ID}, claimIDs(t, r1), "r1 is publishing the second event")

	replayed, err := outboxops.Replay(ctx, b.pool, outboxops.ReplayOptions{
		From: evs[0].OccurredAt.Add(-time.Minute), To: time.Now().Add(time.Minute), AggregateType: "order", AggregateID: "lane"})
	require.NoError(t, err)
	require.Equal(t, int64(1), replayed)

	require.Empty(t, claimIDs(t, r2), "the lane is busy with the second event")
	markOne(t, r1, evs[1].ID)
	got, _, err := r2.ClaimForTest(ctx)
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
	evs := testdb.Enqueue(t, b.pool, testdb.Event(t, "race", "One"), testdb.Event(t, "race", "Two"))
	rA := b.newRelay(t, outbox.RelayConfig{Owner: "relay-a"})
	rB := b.newRelay(t, outbox.RelayConfig{Owner: "relay-b"})
	require.Equal(t, []uuid.UUID{evs[0].ID}, claimIDs(t, rA))
	markOne(t, rA, evs[0].ID)

	txA, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer txA.Rollback(ctx) //nolint:errcheck // a no-op once committed
	got, err := rA.ClaimInTxForTest(ctx, txA)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{evs[1].ID}, ids(got), "A holds the second event, uncommitted")

	type result struct {
		n   int64
		err error
	}
	replayed := make(chan result, 1)
	go func() {
		n, err := outboxops.Replay(ctx, b.pool, outboxops.ReplayOptions{
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
	require.Empty(t, claimIDs(t, rB), "B must not take the replayed first event while A holds the second")
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
	require.Empty(t, claimIDs(t, rB), "A's lease on the second event holds the replayed first one back")

	markOne(t, rA, evs[1].ID)
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
	evs := testdb.Enqueue(t, b.pool, testdb.Event(t, "stale", "One"), testdb.Event(t, "stale", "Two"))
	rA := b.newRelay(t, outbox.RelayConfig{Owner: "relay-a"})
	rB := b.newRelay(t, outbox.RelayConfig{Owner: "relay-b"})
	require.Equal(t, []uuid.UUID{evs[0].ID}, claimIDs(t, rA))
	markOne(t, rA, evs[0].ID)

	staleClaim := func(r *outbox.PollRelay, between func()) []uuid.UUID {
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
	verify := func(r *outbox.PollRelay, ids ...uuid.UUID) []uuid.UUID {
		t.Helper()
		var released []uuid.UUID
		require.NoError(t, pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			var err error
			released, err = r.VerifyClaimInTxForTest(ctx, tx, ids...)
			return err
		}))
		return released
	}
	window := outboxops.ReplayOptions{From: evs[0].OccurredAt.Add(-time.Minute), To: time.Now().Add(time.Minute),
		AggregateType: "order", AggregateID: "stale"}

	claimedA := staleClaim(rA, func() {
		n, err := outboxops.Replay(ctx, b.pool, window)
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
