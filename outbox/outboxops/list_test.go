package outboxops_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestListFiltersAndPages: the held and skipped lists, the filters by
// event type, error and age, and keyset pages that visit every event once.
func TestListFiltersAndPages(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	// a: quarantined head, a held event behind it; b: one pending event,
	// older than an hour; c: a skipped event.
	a := testdb.Enqueue(t, pool, testdb.Event(t, "a", "One"), testdb.Event(t, "a", "Two"))
	b := testdb.Enqueue(t, pool, testdb.Event(t, "b", "One"))[0]
	c := testdb.Enqueue(t, pool, testdb.Event(t, "c", "One"))[0]
	outboxtest.Force(t, pool, outboxtest.Match{ID: a[0].ID}, outboxtest.SetQuarantined(0, "rpc error: Unavailable"))
	outboxtest.Force(t, pool, outboxtest.Match{ID: c.ID}, outboxtest.SetQuarantined(0, "permanent: bad"))
	_, err := outboxops.Skip(ctx, pool, c.ID, "test", "ops")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE outbox_events SET occurred_at = now() - interval '2 hours' WHERE event_id = $1`, b.ID)
	require.NoError(t, err)

	list := func(o outboxops.ListOptions) []uuid.UUID {
		t.Helper()
		events, err := outboxops.List(ctx, pool, o)
		require.NoError(t, err)
		var out []uuid.UUID
		for _, e := range events {
			out = append(out, e.ID)
		}
		return out
	}
	require.Equal(t, []uuid.UUID{a[1].ID}, list(outboxops.ListOptions{Held: true}))
	require.Equal(t, []uuid.UUID{c.ID}, list(outboxops.ListOptions{Skipped: true}))
	require.Equal(t, []uuid.UUID{a[1].ID}, list(outboxops.ListOptions{Pending: true, EventType: "Two"}))
	require.Equal(t, []uuid.UUID{a[0].ID}, list(outboxops.ListOptions{Quarantined: true, ErrorContains: "unavailable"}))
	require.Empty(t, list(outboxops.ListOptions{Quarantined: true, ErrorContains: "permanent"}))
	require.Equal(t, []uuid.UUID{b.ID}, list(outboxops.ListOptions{Pending: true, OccurredBefore: time.Now().Add(-time.Hour)}))
	_, err = outboxops.List(ctx, pool, outboxops.ListOptions{Held: true, Skipped: true})
	require.Error(t, err)

	// Keyset pages of one: every pending event once, in the list's order.
	all := list(outboxops.ListOptions{Pending: true})
	require.Len(t, all, 2)
	var paged []uuid.UUID
	var after *outboxops.ListKey
	for range 5 {
		events, err := outboxops.List(ctx, pool, outboxops.ListOptions{Pending: true, Limit: 1, After: after})
		require.NoError(t, err)
		if len(events) == 0 {
			break
		}
		paged = append(paged, events[0].ID)
		k := events[0].Key()
		after = &k
	}
	require.Equal(t, all, paged)
}
