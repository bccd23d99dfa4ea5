package ctl

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ctltest"
)

// TestReplay: the published events of a window are counted, a dry run without
// --yes when nobody can confirm, then flagged, unpublished and republished by
// a relay with Event.Replay set; an interactive "n" replays nothing.
// --aggregate is of the type --aggregate-type names, and must name one when
// aggregates of two types share the id: another type's aggregate of the
// same ID is not replayed.
func TestReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	evs := b.Enqueue(t, "o-replay", "OrderCreated", "OrderCancelled")
	other := b.Enqueue(t, "o-other", "OrderCreated")[0]
	namesake := b.EnqueueTyped(t, "customer", "o-replay", "CustomerCreated")
	for _, id := range ctltest.IDs(append(evs, other, namesake)...) {
		b.Force(t, id, outboxtest.SetPublished(0))
	}
	from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	to := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r := b.Ctl(t, "replay", "--from", from, "--to", to, "--aggregate", "o-replay", "--yes")
	require.Equal(t, 2, r.Code)
	require.Contains(t, r.Stderr, `aggregates of 2 types have the id "o-replay" (customer, order): say which with --aggregate-type`)
	require.NotNil(t, b.Row(t, evs[0].ID).PublishedAt, "nothing replayed")
	args := []string{"replay", "--from", from, "--to", to, "--aggregate", "o-replay", "--aggregate-type", "order"}

	// Not a terminal, no --yes: a dry run, nothing changed (it was a
	// refusal with exit status 2 before every command took one rule).
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Logger: quiet(), DatabaseURL: b.URL, Stdin: strings.NewReader(""), Actor: "test"}
	require.NoError(t, commands["replay"].Run(b.Ctx, env, args[1:]))
	require.Contains(t, out.String(), "2 published events of aggregate order/o-replay")
	require.Contains(t, out.String(), "dry run (stdin is not a terminal, so there is nobody to confirm): nothing was replayed; pass --yes to replay these 2 events")
	require.NotNil(t, b.Row(t, evs[0].ID).PublishedAt)
	// A terminal answering "n": nothing changed.
	env.Interactive, env.Stdin = true, strings.NewReader("n\n")
	require.ErrorContains(t, commands["replay"].Run(b.Ctx, env, args[1:]), "not confirmed")
	require.NotNil(t, b.Row(t, evs[0].ID).PublishedAt)

	r = b.OK(t, append(args, "--yes")...)
	require.Contains(t, r.Stdout, "replayed 2 events")
	require.Contains(t, r.Stderr, "events replayed")
	for _, e := range evs {
		row := b.Row(t, e.ID)
		require.Nil(t, row.PublishedAt)
		require.NotNil(t, row.ReplayRequestedAt)
		require.Zero(t, row.Attempts)
	}
	require.NotNil(t, b.Row(t, other.ID).PublishedAt, "other aggregates are not replayed")
	require.NotNil(t, b.Row(t, namesake.ID).PublishedAt, "nor another type's aggregate of the same ID")

	rec := b.RunRelay(t)
	b.WaitPublished(t, ctltest.IDs(evs...)...)
	replayed := rec.Wait(t, 2, 5*time.Second)
	require.Len(t, replayed, 2)
	for i, e := range replayed {
		require.True(t, e.Replay, "the publisher sees a replay")
		require.Equal(t, evs[i].ID, e.ID, "in aggregate order")
	}
	for _, e := range evs {
		require.Nil(t, b.Row(t, e.ID).ReplayRequestedAt, "the mark clears the flag")
	}

	r = b.OK(t, "replay", "--from", time.Now().Add(-3*time.Hour).UTC().Format(time.RFC3339),
		"--to", time.Now().Add(-2*time.Hour).UTC().Format(time.RFC3339))
	require.Contains(t, r.Stdout, "nothing to replay")

	r = b.OK(t, "replay", "--from", from, "--to", to, "--aggregate", "o-replay", "--aggregate-type", "customer", "--yes")
	require.Contains(t, r.Stdout, "1 published events of aggregate customer/o-replay")
	require.Contains(t, r.Stdout, "replayed 1 events")
	b.WaitPublished(t, namesake.ID)
	replayed = rec.Wait(t, 3, 5*time.Second)
	require.Len(t, replayed, 3)
	require.Equal(t, namesake.ID, replayed[2].ID, "only the customer is delivered again")
	require.True(t, replayed[2].Replay)
}

// TestReplayAggregateTypeAlone: without --aggregate, the type filter applies
// only when --aggregate-type is given, and then to every aggregate of it;
// --aggregate without --aggregate-type takes the one type that has an
// aggregate of that id, and says so.
func TestReplayAggregateTypeAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	order := b.Enqueue(t, "o-1", "OrderCreated")[0]
	customer := b.EnqueueTyped(t, "customer", "c-1", "CustomerCreated")
	outboxtest.Force(t, b.Pool, outboxtest.Match{}, outboxtest.SetPublished(0))
	from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	to := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)

	r := b.OK(t, "replay", "--from", from, "--to", to, "--aggregate-type", "customer", "--yes")
	require.Contains(t, r.Stdout, "1 published events of all customer aggregates")
	require.Nil(t, b.Row(t, customer.ID).PublishedAt)
	require.NotNil(t, b.Row(t, order.ID).PublishedAt)

	outboxtest.Force(t, b.Pool, outboxtest.Match{}, outboxtest.SetPublished(0)) // the relay delivered the replay
	r = b.OK(t, "replay", "--from", from, "--to", to, "--yes")
	require.Contains(t, r.Stdout, "2 published events of all aggregates", "no type is assumed")

	r = b.Ctl(t, "replay", "--from", from, "--to", to, "--aggregate", "o-1", "--aggregate-type", "")
	require.Equal(t, 2, r.Code)
	require.Contains(t, r.Stderr, "--aggregate-type must not be empty")

	// --aggregate alone: the one type with an aggregate of that id, said so.
	outboxtest.Force(t, b.Pool, outboxtest.Match{}, outboxtest.SetPublished(0))
	r = b.OK(t, "replay", "--from", from, "--to", to, "--aggregate", "c-1", "--yes")
	require.Contains(t, r.Stdout, "aggregate c-1 is of type customer, the only type with an aggregate of that id")
	require.Contains(t, r.Stdout, "1 published events of aggregate customer/c-1")
	require.Nil(t, b.Row(t, customer.ID).PublishedAt)
	require.NotNil(t, b.Row(t, order.ID).PublishedAt)
	r = b.OK(t, "replay", "--from", from, "--to", to, "--aggregate", "nobody", "--yes")
	require.Contains(t, r.Stdout, `no events of any aggregate with id "nobody"; nothing to replay`)
}

// TestReplayRelativeTimes: --since/--from and --until/--to take a Go
// duration meaning that long before now, beside RFC 3339; --to defaults to
// now. A malformed TIME names both forms, exits 2 and changes nothing.
func TestReplayRelativeTimes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recent := b.Enqueue(t, "o-recent", "OrderCreated")[0]
	old := b.Enqueue(t, "o-old", "OrderCreated")[0]
	b.Force(t, recent.ID, outboxtest.SetOccurred(time.Hour), outboxtest.SetPublished(0))
	b.Force(t, old.ID, outboxtest.SetOccurred(3*time.Hour), outboxtest.SetPublished(0))

	for _, args := range [][]string{
		{"--since", "yesterday"}, {"--from", "2h", "--until", "an hour ago"}, {"--from", "-2h"},
		{"--from", "2h", "--since", "2h"},
	} {
		r := b.Ctl(t, append([]string{"replay", "--yes"}, args...)...)
		require.Equal(t, 2, r.Code, "%v: %s", args, r.Stderr)
		if args[len(args)-2] != "--since" {
			require.Contains(t, r.Stderr, "want an RFC 3339 time such as 2025-06-01T10:00:00Z", "%v", args)
			require.Contains(t, r.Stderr, "or a Go duration meaning that long before now such as 2h or 30m", "%v", args)
		}
		require.NotNil(t, b.Row(t, recent.ID).PublishedAt, "nothing replayed")
	}

	// The last two hours, up to now: the recent event, not the old one.
	r := b.OK(t, "replay", "--since", "2h", "--yes")
	require.Contains(t, r.Stdout, "1 published events of all aggregates")
	require.Nil(t, b.Row(t, recent.ID).PublishedAt)
	require.NotNil(t, b.Row(t, old.ID).PublishedAt)

	// Four hours ago until two hours ago: the old event alone.
	r = b.OK(t, "replay", "--from", "4h", "--until", "2h", "--yes")
	require.Contains(t, r.Stdout, "1 published events of all aggregates")
	require.Nil(t, b.Row(t, old.ID).PublishedAt)

	r = b.Ctl(t, "replay", "--from", "1h", "--to", "2h")
	require.Equal(t, 2, r.Code)
	require.Contains(t, r.Stderr, "--to (")
	require.Contains(t, r.Stderr, ") must be after --from (")

	require.Contains(t, b.OK(t, "help", "replay").Stdout, "or a Go duration meaning that long before now")
}
