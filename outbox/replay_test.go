package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
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

	relay := b.newRelay(t, outbox.Config{PollInterval: 50 * time.Millisecond})
	stop := run(t, relay)
	all := append(append([]outbox.Event{}, inWindow...), otherAgg, old)
	eventually(t, 10*time.Second, func() bool { return published(b.pool, ids(all)...) }, "first delivery")
	stop()
	pending := enqueue(t, b.pool, mustEvent(t, "r", "Three"))[0] // unpublished: not a replay

	win := outbox.ReplayOptions{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), AggregateID: "r"}
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
	run(t, b.newRelay(t, outbox.Config{PollInterval: 50 * time.Millisecond}))
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
	r1 := b.newRelay(t, outbox.Config{Owner: "relay-1"})
	r2 := b.newRelay(t, outbox.Config{Owner: "relay-2"})

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
		From: evs[0].OccurredAt.Add(-time.Minute), To: time.Now().Add(time.Minute), AggregateID: "lane"})
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
