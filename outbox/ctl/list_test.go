package ctl

import (
	"strings"
	"testing"
	"time"

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

	// An error the event got past is not shown as if it were current: a
	// published event's, and a retried event's (attempts reset) until it
	// fails again.
	healed := b.enqueue(t, "o-healed", "OrderCreated")[0]
	b.force(t, healed.ID, outboxtest.SetFailed(3, "Unavailable: temporal down", 0), outboxtest.SetPublished(0))
	retried := b.enqueue(t, "o-retried", "OrderCreated")[0]
	b.quarantine(t, retried.ID, "Unavailable: temporal down")
	b.ok(t, "retry", retried.ID.String(), "--yes")
	r = b.ok(t, "list", "--aggregate", "o-healed")
	require.Contains(t, r.stdout, `published  error_before_publish="Unavailable: temporal down"`)
	require.NotContains(t, r.stdout, "last_error=")
	r = b.ok(t, "list", "--aggregate", "o-retried")
	require.Contains(t, r.stdout, `attempts=0  pending  error_before_retry="Unavailable: temporal down"`)
	require.NotContains(t, r.stdout, "last_error=")
	b.force(t, retried.ID, outboxtest.SetFailed(1, "Unavailable: still down", time.Hour))
	r = b.ok(t, "list", "--aggregate", "o-retried")
	require.Contains(t, r.stdout, `backing_off  last_error="Unavailable: still down"`, "failing again: current")

	r = b.ok(t, "list", "--aggregate", "o-nothing")
	require.Empty(t, r.stdout)
	require.Contains(t, r.stderr, "no events match")
}
