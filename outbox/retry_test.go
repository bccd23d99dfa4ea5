package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
)

// TestRetryAndSkipRules: which states retry and skip accept, and what they
// write. Retry works on quarantined and backing-off events; skip only on
// quarantined ones; both refuse published, skipped and unknown events with
// errors that say what to do.
func TestRetryAndSkipRules(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	evs := enqueue(t, b.pool, mustEvent(t, "q", "One"))
	backing := enqueue(t, b.pool, mustEvent(t, "b", "One"))[0]
	pub := enqueue(t, b.pool, mustEvent(t, "p", "One"))[0]
	q := evs[0]
	_, err := b.pool.Exec(ctx, `UPDATE outbox_events SET quarantined_at = now(), attempt_count = 20, last_error = 'boom' WHERE event_id = $1`, q.ID)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE outbox_events SET available_at = now() + interval '1 hour', attempt_count = 4, last_error = 'flaky' WHERE event_id = $1`, backing.ID)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE outbox_events SET published_at = now() WHERE event_id = $1`, pub.ID)
	require.NoError(t, err)

	// Skip refuses what is not quarantined, and needs a reason.
	_, err = outbox.Skip(ctx, b.pool, backing.ID, "why", "ops")
	require.ErrorIs(t, err, outbox.ErrEventState)
	require.ErrorContains(t, err, "backing_off, not quarantined")
	_, err = outbox.Skip(ctx, b.pool, q.ID, "  ", "ops")
	require.ErrorContains(t, err, "reason is mandatory")
	_, err = outbox.Skip(ctx, b.pool, uuid.New(), "why", "ops")
	require.ErrorIs(t, err, outbox.ErrEventNotFound)

	// Retry: quarantined and backing-off events become available now.
	for _, id := range []uuid.UUID{q.ID, backing.ID} {
		c, err := outbox.Retry(ctx, b.pool, id)
		require.NoError(t, err)
		require.Contains(t, []outbox.EventState{outbox.StateQuarantined, outbox.StateBackingOff}, c.Before.State)
		require.Equal(t, outbox.StatePending, c.After.State)
		require.Equal(t, 0, c.After.Attempts)
		require.Nil(t, c.After.QuarantinedAt)
		require.NotEmpty(t, c.After.LastError, "the last error is kept for the record")
		require.False(t, c.After.AvailableAt.After(time.Now().Add(time.Second)))
	}
	got, _, err := b.newRelay(t, outbox.RelayConfig{}).ClaimForTest(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []uuid.UUID{q.ID, backing.ID}, ids(got), "retried events are claimable at once")

	_, err = outbox.Retry(ctx, b.pool, pub.ID)
	require.ErrorIs(t, err, outbox.ErrEventState)
	require.ErrorContains(t, err, "use replay")
	_, err = outbox.Retry(ctx, b.pool, uuid.New())
	require.ErrorIs(t, err, outbox.ErrEventNotFound)
	_, err = outbox.Retry(ctx, b.pool, q.ID)
	require.ErrorIs(t, err, outbox.ErrEventState, "a claimed event is being published: retry refuses")
	require.ErrorContains(t, err, "publishing it right now")
}

// TestSkipTxJoinsTheCallersTransaction: a skip rolled back with the caller's
// transaction leaves nothing behind.
func TestSkipTxJoinsTheCallersTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	e := enqueue(t, b.pool, mustEvent(t, "s", "One"))[0]
	_, err := b.pool.Exec(ctx, `UPDATE outbox_events SET quarantined_at = now() WHERE event_id = $1`, e.ID)
	require.NoError(t, err)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = outbox.SkipTx(ctx, tx, e.ID, "testing", "ops")
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	l, err := outbox.List(ctx, b.pool, outbox.ListOptions{Quarantined: true})
	require.NoError(t, err)
	require.Len(t, l, 1)
	require.Equal(t, outbox.StateQuarantined, l[0].State)
}

// TestRetryFencesOutTheOldOwner: a relay whose lease expired while it was
// still publishing records its failure late; after an operator's retry that
// late write must change nothing, or it would undo the retry.
func TestRetryFencesOutTheOldOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := enqueue(t, b.pool, mustEvent(t, "late", "One"))[0]
	r1 := b.newRelay(t, outbox.RelayConfig{Owner: "relay-1"})
	got, _, err := r1.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	expireLeases(t, b)

	c, err := outbox.Retry(ctx, b.pool, ev.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StatePending, c.After.State)
	failed, err := r1.FailForTest(ctx, ev.ID, "r1's late failure")
	require.NoError(t, err)
	require.Zero(t, failed, "the old owner's late failure record is fenced out")
	released, err := r1.ReleaseForTest(ctx, ev.ID)
	require.NoError(t, err)
	require.Zero(t, released)
	c2, err := outbox.Retry(ctx, b.pool, ev.ID)
	require.NoError(t, err)
	require.Equal(t, outbox.StatePending, c2.Before.State, "the retry stands")
}
