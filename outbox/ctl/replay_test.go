package ctl

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
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
	evs := b.enqueue(t, "o-replay", "OrderCreated", "OrderCancelled")
	other := b.enqueue(t, "o-other", "OrderCreated")[0]
	namesake := b.enqueueTyped(t, "customer", "o-replay", "CustomerCreated")
	for _, id := range idsOf(append(evs, other, namesake)...) {
		b.force(t, id, outboxtest.SetPublished(0))
	}
	from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	to := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r := b.ctl(t, "replay", "--from", from, "--to", to, "--aggregate", "o-replay", "--yes")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `aggregates of 2 types have the id "o-replay" (customer, order): say which with --aggregate-type`)
	require.NotNil(t, b.row(t, evs[0].ID).PublishedAt, "nothing replayed")
	args := []string{"replay", "--from", from, "--to", to, "--aggregate", "o-replay", "--aggregate-type", "order"}

	// Not a terminal, no --yes: a dry run, nothing changed (it was a
	// refusal with exit status 2 before every command took one rule).
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Logger: quiet(), DatabaseURL: b.url, Stdin: strings.NewReader(""), Actor: "test"}
	require.NoError(t, commands["replay"].Run(b.ctx, env, args[1:]))
	require.Contains(t, out.String(), "2 published events of aggregate order/o-replay")
	require.Contains(t, out.String(), "dry run (stdin is not a terminal, so there is nobody to confirm): nothing was replayed; pass --yes to replay these 2 events")
	require.NotNil(t, b.row(t, evs[0].ID).PublishedAt)
	// A terminal answering "n": nothing changed.
	env.Interactive, env.Stdin = true, strings.NewReader("n\n")
	require.ErrorContains(t, commands["replay"].Run(b.ctx, env, args[1:]), "not confirmed")
	require.NotNil(t, b.row(t, evs[0].ID).PublishedAt)

	r = b.ok(t, append(args, "--yes")...)
	require.Contains(t, r.stdout, "replayed 2 events")
	require.Contains(t, r.stderr, "events replayed")
	for _, e := range evs {
		row := b.row(t, e.ID)
		require.Nil(t, row.PublishedAt)
		require.NotNil(t, row.ReplayRequestedAt)
		require.Zero(t, row.Attempts)
	}
	require.NotNil(t, b.row(t, other.ID).PublishedAt, "other aggregates are not replayed")
	require.NotNil(t, b.row(t, namesake.ID).PublishedAt, "nor another type's aggregate of the same ID")

	rec := b.runRelay(t)
	b.waitPublished(t, idsOf(evs...)...)
	replayed := rec.Wait(t, 2, 5*time.Second)
	require.Len(t, replayed, 2)
	for i, e := range replayed {
		require.True(t, e.Replay, "the publisher sees a replay")
		require.Equal(t, evs[i].ID, e.ID, "in aggregate order")
	}
	for _, e := range evs {
		require.Nil(t, b.row(t, e.ID).ReplayRequestedAt, "the mark clears the flag")
	}

	r = b.ok(t, "replay", "--from", time.Now().Add(-3*time.Hour).UTC().Format(time.RFC3339),
		"--to", time.Now().Add(-2*time.Hour).UTC().Format(time.RFC3339))
	require.Contains(t, r.stdout, "nothing to replay")

	r = b.ok(t, "replay", "--from", from, "--to", to, "--aggregate", "o-replay", "--aggregate-type", "customer", "--yes")
	require.Contains(t, r.stdout, "1 published events of aggregate customer/o-replay")
	require.Contains(t, r.stdout, "replayed 1 events")
	b.waitPublished(t, namesake.ID)
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
	order := b.enqueue(t, "o-1", "OrderCreated")[0]
	customer := b.enqueueTyped(t, "customer", "c-1", "CustomerCreated")
	outboxtest.Force(t, b.pool, outboxtest.Match{}, outboxtest.SetPublished(0))
	from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	to := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)

	r := b.ok(t, "replay", "--from", from, "--to", to, "--aggregate-type", "customer", "--yes")
	require.Contains(t, r.stdout, "1 published events of all customer aggregates")
	require.Nil(t, b.row(t, customer.ID).PublishedAt)
	require.NotNil(t, b.row(t, order.ID).PublishedAt)

	outboxtest.Force(t, b.pool, outboxtest.Match{}, outboxtest.SetPublished(0)) // the relay delivered the replay
	r = b.ok(t, "replay", "--from", from, "--to", to, "--yes")
	require.Contains(t, r.stdout, "2 published events of all aggregates", "no type is assumed")

	r = b.ctl(t, "replay", "--from", from, "--to", to, "--aggregate", "o-1", "--aggregate-type", "")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--aggregate-type must not be empty")

	// --aggregate alone: the one type with an aggregate of that id, said so.
	outboxtest.Force(t, b.pool, outboxtest.Match{}, outboxtest.SetPublished(0))
	r = b.ok(t, "replay", "--from", from, "--to", to, "--aggregate", "c-1", "--yes")
	require.Contains(t, r.stdout, "aggregate c-1 is of type customer, the only type with an aggregate of that id")
	require.Contains(t, r.stdout, "1 published events of aggregate customer/c-1")
	require.Nil(t, b.row(t, customer.ID).PublishedAt)
	require.NotNil(t, b.row(t, order.ID).PublishedAt)
	r = b.ok(t, "replay", "--from", from, "--to", to, "--aggregate", "nobody", "--yes")
	require.Contains(t, r.stdout, `no events of any aggregate with id "nobody"; nothing to replay`)
}

// enqueueTyped commits one event of an aggregate of any type.
func (b *testBundle) enqueueTyped(t *testing.T, aggregateType, aggregateID, eventType string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent(aggregateType, aggregateID, eventType, 1, map[string]string{"id": aggregateID})
	require.NoError(t, err)
	return testdb.Enqueue(t, b.pool, e)[0]
}

// TestReplayRelativeTimes: --since/--from and --until/--to take a Go
// duration meaning that long before now, beside RFC 3339; --to defaults to
// now. A malformed TIME names both forms, exits 2 and changes nothing.
func TestReplayRelativeTimes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	recent := b.enqueue(t, "o-recent", "OrderCreated")[0]
	old := b.enqueue(t, "o-old", "OrderCreated")[0]
	b.force(t, recent.ID, outboxtest.SetOccurred(time.Hour), outboxtest.SetPublished(0))
	b.force(t, old.ID, outboxtest.SetOccurred(3*time.Hour), outboxtest.SetPublished(0))

	for _, args := range [][]string{
		{"--since", "yesterday"}, {"--from", "2h", "--until", "an hour ago"}, {"--from", "-2h"},
		{"--from", "2h", "--since", "2h"},
	} {
		r := b.ctl(t, append([]string{"replay", "--yes"}, args...)...)
		require.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		if args[len(args)-2] != "--since" {
			require.Contains(t, r.stderr, "want an RFC 3339 time such as 2025-06-01T10:00:00Z", "%v", args)
			require.Contains(t, r.stderr, "or a Go duration meaning that long before now such as 2h or 30m", "%v", args)
		}
		require.NotNil(t, b.row(t, recent.ID).PublishedAt, "nothing replayed")
	}

	// The last two hours, up to now: the recent event, not the old one.
	r := b.ok(t, "replay", "--since", "2h", "--yes")
	require.Contains(t, r.stdout, "1 published events of all aggregates")
	require.Nil(t, b.row(t, recent.ID).PublishedAt)
	require.NotNil(t, b.row(t, old.ID).PublishedAt)

	// Four hours ago until two hours ago: the old event alone.
	r = b.ok(t, "replay", "--from", "4h", "--until", "2h", "--yes")
	require.Contains(t, r.stdout, "1 published events of all aggregates")
	require.Nil(t, b.row(t, old.ID).PublishedAt)

	r = b.ctl(t, "replay", "--from", "1h", "--to", "2h")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "--to (")
	require.Contains(t, r.stderr, ") must be after --from (")

	require.Contains(t, b.ok(t, "help", "replay").stdout, "or a Go duration meaning that long before now")
}
