package outboxops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestReplayRepublishesTheWindowFlaggedAsReplays: published events in the
// window become unpublished, available, with attempts reset and the replay
// flag; the relay hands them to the publisher with Event.Replay set, and the
// mark clears the flag. Events outside the window or of another aggregate,
// and unpublished ones, are untouched.
func TestReplayRepublishesTheWindowFlaggedAsReplays(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	inWindow := testdb.Enqueue(t, pool, testdb.Event(t, "r", "One"), testdb.Event(t, "r", "Two"))
	otherAgg := testdb.Enqueue(t, pool, testdb.Event(t, "x", "One"))[0]
	old := testdb.Enqueue(t, pool, testdb.Event(t, "old", "One"))[0]
	outboxtest.Force(t, pool, outboxtest.Match{ID: old.ID}, outboxtest.SetOccurred(48*time.Hour))

	first := &outboxtest.Recorder{}
	stop := outboxtest.RunRelay(t, pool, first, outbox.RelayConfig{})
	first.Wait(t, 4, 10*time.Second)
	stop()
	all := append(append([]outbox.Event{}, inWindow...), otherAgg, old)
	require.True(t, published(t, pool, ids(all)...), "first delivery")
	pending := testdb.Enqueue(t, pool, testdb.Event(t, "r", "Three"))[0] // unpublished: not a replay

	win := outboxops.ReplayOptions{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), AggregateType: "order", AggregateID: "r"}
	plan, err := outboxops.PlanReplay(ctx, pool, win)
	require.NoError(t, err)
	require.Equal(t, int64(2), plan.Events)
	n, err := outboxops.Replay(ctx, pool, win)
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	for _, e := range inWindow {
		r := row(t, pool, e.ID)
		require.Nil(t, r.PublishedAt)
		require.Zero(t, r.Attempts)
		require.Empty(t, r.ClaimedBy)
		require.NotNil(t, r.ReplayRequestedAt)
	}
	require.True(t, published(t, pool, otherAgg.ID, old.ID), "other aggregates and older events are untouched")
	st, err := outboxops.Status(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, int64(2), st.Replaying)
	require.Less(t, st.OldestPendingAge, time.Hour, "a replay's age counts from its request")

	again := &outboxtest.Recorder{}
	stop = outboxtest.RunRelay(t, pool, again, outbox.RelayConfig{})
	acked := again.Wait(t, 3, 10*time.Second)
	stop() // the relay's marks are written when it has stopped
	require.True(t, published(t, pool, inWindow[0].ID, inWindow[1].ID, pending.ID), "replayed and republished")
	require.Len(t, acked, 3)
	for i, e := range acked {
		require.Equal(t, int64(i+1), e.Sequence, "the aggregate's order is kept")
		require.Equal(t, e.ID != pending.ID, e.Replay, "Event.Replay is set on replayed events only")
	}
	for _, e := range outboxtest.Events(t, pool, outboxtest.Match{AggregateType: "order", AggregateID: "r"}) {
		require.Nil(t, e.ReplayRequestedAt, "the mark clears the replay flag")
	}
}

// TestReplayRefusesBadWindows: a window that is empty, inverted, or reaches
// before the cleanup horizon is refused.
func TestReplayRefusesBadWindows(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	now := time.Now()
	_, err := outboxops.Replay(ctx, pool, outboxops.ReplayOptions{From: now, To: now.Add(-time.Minute)})
	require.ErrorIs(t, err, outboxops.ErrReplayWindow)
	_, err = outboxops.Replay(ctx, pool, outboxops.ReplayOptions{To: now})
	require.ErrorIs(t, err, outboxops.ErrReplayWindow)
	_, err = outboxops.PlanReplay(ctx, pool, outboxops.ReplayOptions{From: now.Add(-time.Hour), To: now, AggregateID: "o-1"})
	require.ErrorIs(t, err, outboxops.ErrReplayWindow, "an aggregate ID without its type is ambiguous")
	require.ErrorContains(t, err, "AggregateType")

	_, err = outboxops.Cleanup(ctx, pool, outboxops.CleanupOptions{Retention: 24 * time.Hour})
	require.NoError(t, err)
	st, err := outboxops.Status(ctx, pool)
	require.NoError(t, err)
	h := st.CleanupHorizon
	require.NotNil(t, h)
	_, err = outboxops.Replay(ctx, pool, outboxops.ReplayOptions{From: now.Add(-48 * time.Hour), To: now})
	require.ErrorIs(t, err, outboxops.ErrReplayWindow)
	require.ErrorContains(t, err, "cleanup horizon")
	n, err := outboxops.Replay(ctx, pool, outboxops.ReplayOptions{From: h.Add(time.Second), To: now})
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestReplayFiltersOnAggregateType: an aggregate ID is unique only within
// its type, so a replay of one aggregate leaves another type's aggregate of
// the same ID alone; a type alone selects every aggregate of that type.
func TestReplayFiltersOnAggregateType(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	customer, err := outbox.NewEvent("customer", "same", "CustomerCreated", 1, map[string]string{"id": "same"})
	require.NoError(t, err)
	order := testdb.Enqueue(t, pool, testdb.Event(t, "same", "OrderCreated"))[0]
	other := testdb.Enqueue(t, pool, testdb.Event(t, "other", "OrderCreated"))[0]
	cust := testdb.Enqueue(t, pool, customer)[0]
	_, err = pool.Exec(ctx, `UPDATE outbox_events SET published_at = now()`)
	require.NoError(t, err)
	win := outboxops.ReplayOptions{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)}

	one := win
	one.AggregateType, one.AggregateID = "order", "same"
	plan, err := outboxops.PlanReplay(ctx, pool, one)
	require.NoError(t, err)
	require.Equal(t, int64(1), plan.Events)
	n, err := outboxops.Replay(ctx, pool, one)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Nil(t, row(t, pool, order.ID).PublishedAt)
	require.True(t, published(t, pool, other.ID, cust.ID), "the customer of the same ID is not replayed")

	customers := win
	customers.AggregateType = "customer"
	n, err = outboxops.Replay(ctx, pool, customers)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	require.Nil(t, row(t, pool, cust.ID).PublishedAt)
	require.True(t, published(t, pool, other.ID))
}

// TestReplayRefusesWindowsBeforeTheReplayHorizon: once the starter has
// recorded how long Temporal keeps closed workflows, a window reaching
// further back is refused with the horizon, its reason and the earliest
// start allowed; a later recording replaces the earlier one.
func TestReplayRefusesWindowsBeforeTheReplayHorizon(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	ev := testdb.Enqueue(t, pool, testdb.Event(t, "h", "One"))[0]
	_, err := pool.Exec(ctx, `UPDATE outbox_events SET published_at = now(), occurred_at = now() - interval '30 hours' WHERE event_id = $1`, ev.ID)
	require.NoError(t, err)
	old := outboxops.ReplayOptions{From: time.Now().Add(-31 * time.Hour), To: time.Now()}

	h, reason, err := outboxops.ReplayHorizon(ctx, pool)
	require.NoError(t, err)
	require.Zero(t, h, "never recorded")
	require.Empty(t, reason)
	plan, err := outboxops.PlanReplay(ctx, pool, old)
	require.NoError(t, err, "without a replay horizon only the cleanup horizon limits a replay")
	require.Equal(t, int64(1), plan.Events)

	require.Error(t, outboxops.RecordReplayHorizon(ctx, pool, 0, "zero"))
	require.Error(t, outboxops.RecordReplayHorizon(ctx, pool, time.Hour, " "))
	require.NoError(t, outboxops.RecordReplayHorizon(ctx, pool, 72*time.Hour, "an older retention"))
	const why = `Temporal namespace "default" keeps closed workflows 24h0m0s`
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return outboxops.RecordReplayHorizon(ctx, tx, 24*time.Hour, why)
	}))
	h, reason, err = outboxops.ReplayHorizon(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, h, "the latest recording wins")
	require.Equal(t, why, reason)

	_, err = outboxops.PlanReplay(ctx, pool, old)
	requireBeyondHorizon(t, err, why)
	_, err = outboxops.Replay(ctx, pool, old)
	requireBeyondHorizon(t, err, why)
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := outboxops.Replay(ctx, tx, old)
		requireBeyondHorizon(t, err, why)
		return nil
	}))
	require.True(t, published(t, pool, ev.ID), "nothing was replayed")

	recent := outboxops.ReplayOptions{From: time.Now().Add(-23 * time.Hour), To: time.Now()}
	_, err = outboxops.Replay(ctx, pool, recent)
	require.NoError(t, err, "a window within the horizon is allowed")
}

// requireBeyondHorizon checks a refusal of a window older than a 24h replay
// horizon recorded with reason.
func requireBeyondHorizon(t *testing.T, err error, reason string) {
	t.Helper()
	require.ErrorIs(t, err, outboxops.ErrReplayWindow)
	require.ErrorContains(t, err, "replay horizon of 24h0m0s")
	require.ErrorContains(t, err, reason)
	_, after, ok := strings.Cut(err.Error(), "start the window at or after ")
	require.True(t, ok, "the message names the earliest start allowed: %v", err)
	earliest, perr := time.Parse(time.RFC3339Nano, after)
	require.NoError(t, perr)
	require.WithinDuration(t, time.Now().Add(-24*time.Hour), earliest, time.Minute)
}
