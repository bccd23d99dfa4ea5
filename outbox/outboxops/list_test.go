package outboxops_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
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

// TestHeldIsWhatThePendingListCallsBlocked: the held list (one window over
// the unpublished rows) lists exactly the pending events whose state, as
// every other list derives it (a predecessor probe per event), is blocked,
// in the same order, also page by page, over aggregates in every mix of
// states: published, quarantined, skipped with and without its tombstone
// handed on, backing off and pending.
func TestHeldIsWhatThePendingListCallsBlocked(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	for i := range 40 {
		var events []outbox.Event
		for range 1 + i%5 {
			events = append(events, testdb.Event(t, fmt.Sprintf("agg-%02d", i), "Step"))
		}
		testdb.Enqueue(t, pool, events...)
	}
	// Each event's state from its id's hash: a mix that repeats in no
	// pattern the aggregates' sizes share.
	_, err := pool.Exec(ctx, `
		WITH s AS (SELECT event_id, abs(hashtext(event_id::text)) % 6 AS k FROM outbox_events)
		UPDATE outbox_events e SET
		    published_at      = CASE WHEN s.k = 0 THEN now() END,
		    quarantined_at    = CASE WHEN s.k = 1 THEN now() END,
		    skipped_at        = CASE WHEN s.k IN (2, 3) THEN now() END,
		    skip_published_at = CASE WHEN s.k = 2 THEN now() END,
		    attempt_count     = CASE WHEN s.k = 4 THEN 2 ELSE 0 END,
		    available_at      = CASE WHEN s.k = 4 THEN now() + interval '1 minute' ELSE e.available_at END
		FROM s WHERE s.event_id = e.event_id`)
	require.NoError(t, err)

	pending, err := outboxops.List(ctx, pool, outboxops.ListOptions{Pending: true, Limit: 1000})
	require.NoError(t, err)
	var blocked []uuid.UUID
	for _, e := range pending {
		if e.State == outboxops.StateBlocked {
			blocked = append(blocked, e.ID)
		}
	}
	require.NotEmpty(t, blocked, "the mix holds no blocked event: the test would prove nothing")
	require.Less(t, len(blocked), len(pending), "every pending event is blocked: the test would not tell held from pending")

	var held []uuid.UUID
	var after *outboxops.ListKey
	for range len(blocked) + 2 {
		page, err := outboxops.List(ctx, pool, outboxops.ListOptions{Held: true, Limit: 3, After: after})
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			require.Equal(t, outboxops.StateBlocked, e.State, "event %s", e.ID)
			held = append(held, e.ID)
		}
		k := page[len(page)-1].Key()
		after = &k
	}
	require.Equal(t, blocked, held)
}

// TestListAllPagesBothTables: pages of a pending list, read the way the
// console reads them (one entry more than the page, then Head and Next),
// visit every pending event of outbox_events and of the log once, in the
// order of the whole list; before, the log's events came only on a first
// page with room for them, so a log-source database's backlog beyond one
// page could not be paged.
func TestListAllPagesBothTables(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	for i := range 7 {
		testdb.Enqueue(t, pool, testdb.Event(t, fmt.Sprintf("poll-%d", i), "One"))
	}
	for i := range 9 {
		testdb.EnqueueAsRead(t, pool, "log", testdb.Event(t, fmt.Sprintf("log-%d", i%4), "One"))
	}
	ids := func(l outboxops.Listing) []uuid.UUID {
		var out []uuid.UUID
		for _, e := range l.Events {
			out = append(out, e.ID)
		}
		for _, e := range l.LogEvents {
			out = append(out, e.ID)
		}
		return out
	}
	whole, err := outboxops.ListAll(ctx, pool, outboxops.ListOptions{Pending: true})
	require.NoError(t, err)
	require.Len(t, whole.Events, 7)
	require.Len(t, whole.LogEvents, 9)

	const size = 4
	opts := outboxops.ListOptions{Pending: true, Limit: size + 1}
	var paged []uuid.UUID
	for range 10 {
		l, err := outboxops.ListAll(ctx, pool, opts)
		require.NoError(t, err)
		more := l.Len() > size
		if more {
			l = l.Head(size)
		}
		paged = append(paged, ids(l)...)
		if !more {
			break
		}
		opts = l.Next(opts)
	}
	require.Equal(t, ids(whole), paged)
}
