package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest"
)

// TestList: one event a line with the event id first; --pending,
// --quarantined, --aggregate and --limit select; an aggregate comes in
// sequence order with its blocked successors; last_error is truncated.
func TestList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lane := b.enqueue(t, "o-lane", "OrderCreated", "OrderCancelled")
	other := b.enqueue(t, "o-other", "OrderCreated")[0]
	done := b.enqueue(t, "o-done", "OrderCreated")[0]
	b.quarantine(t, lane[0].ID, "temporalpub: event OrderCreated has a payload its workflow cannot process: "+strings.Repeat("x", 300))
	b.force(t, done.ID, outboxtest.SetPublished(0))

	lines := func(out string) []string { return strings.Split(strings.TrimSpace(out), "\n") }

	r := b.ok(t, "list", "--quarantined")
	ls := lines(r.stdout)
	require.Len(t, ls, 1)
	f := strings.Fields(ls[0])
	require.Equal(t, []string{lane[0].ID.String(), "OrderCreated", "order/o-lane", "seq=1", "attempts=20", "quarantined"}, f[:6])
	require.Contains(t, ls[0], `last_error="temporalpub: event OrderCreated`)
	require.Less(t, len(ls[0]), 250, "last_error is truncated")
	require.Contains(t, ls[0], "…")

	r = b.ok(t, "list", "--pending")
	ls = lines(r.stdout)
	require.Len(t, ls, 2, r.stdout)
	got := map[string]string{}
	for _, l := range ls {
		f := strings.Fields(l)
		got[f[0]] = f[5]
	}
	require.Equal(t, map[string]string{lane[1].ID.String(): "blocked", other.ID.String(): "pending"}, got)

	r = b.ok(t, "list", "--aggregate", "o-lane")
	ls = lines(r.stdout)
	require.Len(t, ls, 2)
	require.True(t, strings.HasPrefix(ls[0], lane[0].ID.String()))
	require.True(t, strings.HasPrefix(ls[1], lane[1].ID.String()))

	r = b.ok(t, "list")
	require.Len(t, lines(r.stdout), 4, "every event, published ones too")
	require.Contains(t, r.stdout, "published")
	r = b.ok(t, "list", "--limit", "1")
	require.Len(t, lines(r.stdout), 1)

	r = b.ok(t, "list", "--aggregate", "o-nothing")
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "no events match")
}
