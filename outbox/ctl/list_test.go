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
	lane := b.Enqueue(t, "o-lane", "OrderCreated", "OrderCancelled")
	other := b.Enqueue(t, "o-other", "OrderCreated")[0]
	done := b.Enqueue(t, "o-done", "OrderCreated")[0]
	b.Quarantine(t, lane[0].ID, "temporalpub: event OrderCreated has a payload its workflow cannot process: "+strings.Repeat("x", 300))
	b.Force(t, done.ID, outboxtest.SetPublished(0))

	lines := func(out string) []string { return strings.Split(strings.TrimSpace(out), "\n") }

	r := b.OK(t, "list", "--quarantined")
	ls := lines(r.Stdout)
	require.Len(t, ls, 1)
	f := strings.Fields(ls[0])
	require.Equal(t, []string{lane[0].ID.String(), "OrderCreated", "order/o-lane", "seq=1", "attempts=20", "quarantined"}, f[:6])
	require.Contains(t, ls[0], `last_error="temporalpub: event OrderCreated`)
	require.Less(t, len(ls[0]), 250, "last_error is truncated")
	require.Contains(t, ls[0], "…")

	r = b.OK(t, "list", "--pending")
	ls = lines(r.Stdout)
	require.Len(t, ls, 2, r.Stdout)
	got := map[string]string{}
	for _, l := range ls {
		f := strings.Fields(l)
		got[f[0]] = f[5]
	}
	require.Equal(t, map[string]string{lane[1].ID.String(): "blocked", other.ID.String(): "pending"}, got)

	r = b.OK(t, "list", "--aggregate", "o-lane")
	ls = lines(r.Stdout)
	require.Len(t, ls, 2)
	require.True(t, strings.HasPrefix(ls[0], lane[0].ID.String()))
	require.True(t, strings.HasPrefix(ls[1], lane[1].ID.String()))

	r = b.OK(t, "list")
	require.Len(t, lines(r.Stdout), 4, "every event, published ones too")
	require.Contains(t, r.Stdout, "published")
	r = b.OK(t, "list", "--limit", "1")
	require.Len(t, lines(r.Stdout), 1)

	// An error the event got past is not shown as if it were current: a
	// published event's, and a retried event's (attempts reset) until it
	// fails again.
	healed := b.Enqueue(t, "o-healed", "OrderCreated")[0]
	b.Force(t, healed.ID, outboxtest.SetFailed(3, "Unavailable: temporal down", 0), outboxtest.SetPublished(0))
	retried := b.Enqueue(t, "o-retried", "OrderCreated")[0]
	b.Quarantine(t, retried.ID, "Unavailable: temporal down")
	b.OK(t, "retry", retried.ID.String(), "--yes")
	r = b.OK(t, "list", "--aggregate", "o-healed")
	require.Contains(t, r.Stdout, `published  error_before_publish="Unavailable: temporal down"`)
	require.NotContains(t, r.Stdout, "last_error=")
	r = b.OK(t, "list", "--aggregate", "o-retried")
	require.Contains(t, r.Stdout, `attempts=0  pending  error_before_retry="Unavailable: temporal down"`)
	require.NotContains(t, r.Stdout, "last_error=")
	b.Force(t, retried.ID, outboxtest.SetFailed(1, "Unavailable: still down", time.Hour))
	r = b.OK(t, "list", "--aggregate", "o-retried")
	require.Contains(t, r.Stdout, `backing_off  last_error="Unavailable: still down"`, "failing again: current")

	r = b.OK(t, "list", "--aggregate", "o-nothing")
	require.Empty(t, r.Stdout)
	require.Contains(t, r.Stderr, "no events match")
}
