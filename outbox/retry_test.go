package outbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// The operator's retry against the relay's own statements (its package's
// tests are in outbox/outboxops; these need the relay's statement hooks).

// TestRetryFencesOutTheOldOwner: a relay whose lease expired while it was
// still publishing records its failure late; after an operator's retry that
// late write must change nothing, or it would undo the retry.
func TestRetryFencesOutTheOldOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	ev := testdb.Enqueue(t, b.pool, testdb.Event(t, "late", "One"))[0]
	r1 := b.newRelay(t, outbox.RelayConfig{Owner: "relay-1"})
	got, _, err := r1.ClaimForTest(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	expireLeases(t, b)

	c, err := outboxops.Retry(ctx, b.pool, ev.ID)
	require.NoError(t, err)
	require.Equal(t, outboxops.StatePending, c.After.State)
	failed, err := r1.FailForTest(ctx, ev.ID, "r1's late failure")
	require.NoError(t, err)
	require.Zero(t, failed, "the old owner's late failure record is fenced out")
	released, err := r1.ReleaseForTest(ctx, ev.ID)
	require.NoError(t, err)
	require.Zero(t, released)
	c2, err := outboxops.Retry(ctx, b.pool, ev.ID)
	require.NoError(t, err)
	require.Equal(t, outboxops.StatePending, c2.Before.State, "the retry stands")
}
