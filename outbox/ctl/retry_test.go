package ctl

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ctltest"
)

// TestRetry: a quarantined event becomes available now with attempts 0 and
// its quarantine cleared, the write is logged, and a relay publishes it;
// unknown and published events are refused with exit 1 and advice.
func TestRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	evs := b.Enqueue(t, "o-retry", "OrderCreated", "OrderCancelled")
	b.Quarantine(t, evs[0].ID, "boom")
	done := b.Enqueue(t, "o-done", "OrderCreated")[0]
	b.Force(t, done.ID, outboxtest.SetPublished(0))

	r := b.OK(t, "retry", evs[0].ID.String(), "--yes")
	require.Contains(t, r.Stdout, "quarantined -> pending, attempts 20 -> 0")
	require.Contains(t, r.Stderr, "event retried")
	require.Contains(t, r.Stderr, "actor=")
	row := b.Row(t, evs[0].ID)
	require.Nil(t, row.QuarantinedAt)
	require.Zero(t, row.Attempts)
	require.WithinDuration(t, time.Now(), row.AvailableAt, 5*time.Second)

	b.RunRelay(t)
	b.WaitPublished(t, ctltest.IDs(evs...)...)

	r = b.Ctl(t, "retry", uuid.NewString(), "--yes")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "no outbox event has this ID")
	r = b.Ctl(t, "retry", done.ID.String(), "--yes")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "it was published at")
	require.Contains(t, r.Stderr, "use replay")
}

// TestRetryQuarantined: `retry --quarantined` counts the events its filters
// select and shows a sample; without --yes and without a terminal it is a dry
// run, a terminal answering "n" changes nothing, "y" retries them in batches
// with progress and a summary, audited. Skipped, published and leased events
// are never touched, and a relay then publishes every retried event in its
// order's sequence.
func TestRetryQuarantined(t *testing.T) {
	t.Parallel()
	b := setup(t)
	outage := b.Enqueue(t, "o-outage", "OrderCreated", "OrderCancelled")
	outage2 := b.Enqueue(t, "o-outage-2", "OrderCreated")[0]
	poison := b.Enqueue(t, "o-poison", "OrderCreated")[0]
	skipped := b.Enqueue(t, "o-skipped", "OrderCreated")[0]
	published := b.Enqueue(t, "o-published", "OrderCreated")[0]
	leased := b.Enqueue(t, "o-leased", "OrderCreated")[0]
	b.Quarantine(t, outage[0].ID, "temporalpub: rpc error: code = Unavailable desc = connection refused")
	b.Quarantine(t, outage2.ID, "temporalpub: rpc error: code = Unavailable desc = connection refused")
	b.Quarantine(t, poison.ID, "no route for event type OrderCreated")
	b.Quarantine(t, skipped.ID, "Unavailable")
	b.Force(t, skipped.ID, outboxtest.SetSkipped(0, "ops", "handled by hand"))
	b.Force(t, published.ID, outboxtest.SetFailed(3, "Unavailable", 0), outboxtest.SetPublished(0))
	b.Quarantine(t, leased.ID, "Unavailable")
	b.Force(t, leased.ID, outboxtest.SetLeased("relay-x", time.Hour))
	untouched := func() map[uuid.UUID]outboxtest.Event {
		m := map[uuid.UUID]outboxtest.Event{}
		for _, id := range []uuid.UUID{skipped.ID, published.ID, leased.ID, poison.ID} {
			m[id] = b.Row(t, id)
		}
		return m
	}
	before := untouched()
	audits := func() int {
		var n int
		require.NoError(t, b.Pool.QueryRow(b.Ctx, `SELECT count(*) FROM outbox_bulk_retries`).Scan(&n))
		return n
	}
	args := []string{"--quarantined", "--error-contains", "unavailable", "--since", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
		"--aggregate-type", "order", "--reason", "INC-42 resolved", "--batch-size", "1"}

	// Not a terminal, no --yes: a dry run.
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Logger: quiet(), DatabaseURL: b.URL, Stdin: strings.NewReader(""), Actor: "test@host"}
	require.NoError(t, commands["retry"].Run(b.Ctx, env, args))
	require.Contains(t, out.String(), `2 quarantined events (all order aggregates, last_error contains "unavailable", quarantined since`)
	require.Contains(t, out.String(), outage[0].ID.String())
	require.Contains(t, out.String(), outage2.ID.String())
	require.NotContains(t, out.String(), poison.ID.String())
	require.Contains(t, out.String(), "dry run (stdin is not a terminal, so there is nobody to confirm): nothing was retried; pass --yes to retry these 2 events")
	require.Equal(t, 20, b.Row(t, outage[0].ID).Attempts)
	require.NotNil(t, b.Row(t, outage[0].ID).QuarantinedAt)
	require.Zero(t, audits(), "a dry run writes no audit")

	// A terminal answering "n": nothing changed.
	out.Reset()
	env.Interactive, env.Stdin = true, strings.NewReader("n\n")
	require.ErrorContains(t, commands["retry"].Run(b.Ctx, env, args), "not confirmed; nothing was retried")
	require.Contains(t, errb.String(), "Retry 2 events? [y/N] ")
	require.NotNil(t, b.Row(t, outage2.ID).QuarantinedAt)
	require.Zero(t, audits())

	// "y": retried in batches of one, with progress and a summary.
	out.Reset()
	env.Stdin = strings.NewReader("y\n")
	require.NoError(t, commands["retry"].Run(b.Ctx, env, args))
	require.Contains(t, out.String(), "batch 1: retried 1 events (1 of ~2)")
	require.Contains(t, out.String(), "batch 2: retried 1 events (2 of ~2)")
	require.Contains(t, out.String(), "retried 2 quarantined events in 2 batches")
	require.Contains(t, out.String(), "by test@host")
	for _, id := range []uuid.UUID{outage[0].ID, outage2.ID} {
		r := b.Row(t, id)
		require.Nil(t, r.QuarantinedAt)
		require.Zero(t, r.Attempts, "a fresh attempt budget")
		require.WithinDuration(t, time.Now(), r.AvailableAt, 5*time.Second)
	}
	require.Equal(t, before, untouched(), "skipped, published, leased and unselected events are untouched")
	var by, reason, contains string
	var events int64
	require.NoError(t, b.Pool.QueryRow(b.Ctx, `SELECT retried_by, reason, error_contains, events FROM outbox_bulk_retries`).Scan(&by, &reason, &contains, &events))
	require.Equal(t, []any{"test@host", "INC-42 resolved", "unavailable", int64(2)}, []any{by, reason, contains, events})

	// Nothing matches any more.
	out.Reset()
	require.NoError(t, commands["retry"].Run(b.Ctx, env, args))
	require.Contains(t, out.String(), "no quarantined events match")

	// Through the real entry point with --yes: the rest (the poison event)
	// too; a relay publishes everything retried, each order in sequence.
	r := b.OK(t, "retry", "--quarantined", "--yes")
	require.Contains(t, r.Stdout, "1 quarantined events (all aggregates;")
	require.Contains(t, r.Stdout, "retried 1 quarantined events in 1 batches")
	require.Contains(t, r.Stderr, "quarantined events retried")
	require.Contains(t, r.Stderr, "audit_id=")
	require.Equal(t, 2, audits())
	rec := b.RunRelay(t)
	b.WaitPublished(t, outage[0].ID, outage[1].ID, outage2.ID, poison.ID)
	var seq []uuid.UUID
	for _, e := range rec.Events() {
		if e.AggregateID == "o-outage" {
			seq = append(seq, e.ID)
		}
	}
	require.Equal(t, ctltest.IDs(outage...), seq, "the order's events in sequence")
	require.Nil(t, b.Row(t, leased.ID).PublishedAt, "the leased event was left to its relay")
	require.NotNil(t, b.Row(t, skipped.ID).SkippedAt)
}

// TestRetryQuarantinedUsage: the bulk flags need --quarantined, which takes
// no EVENT_ID, and malformed values exit 2 saying what to write.
func TestRetryQuarantinedUsage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"retry", "--since", "2025-01-01T00:00:00Z"}, "--since: only with --quarantined"},
		{[]string{"retry", "0190f7c2-0000-7000-8000-000000000000", "--reason", "x"}, "--reason: only with --quarantined"},
		{[]string{"retry", "--quarantined", "0190f7c2-0000-7000-8000-000000000000"}, "--quarantined takes no EVENT_ID"},
		{[]string{"retry", "--quarantined", "--since", "yesterday"}, `--since "yesterday": want an RFC 3339 time`},
		{[]string{"retry", "--quarantined", "--batch-size", "0"}, "--batch-size 0 is out of range"},
		{[]string{"retry", "--quarantined", "--actor", " "}, "--actor may not be empty"},
	} {
		r := b.Ctl(t, tc.args...)
		require.Equal(t, 2, r.Code, "%v: %s", tc.args, r.Stderr)
		require.Contains(t, r.Stderr, tc.want, "%v", tc.args)
	}
	r := b.OK(t, "help", "retry")
	require.Contains(t, r.Stdout, "usage: outboxctl retry EVENT_ID")
	require.Contains(t, r.Stdout, "outboxctl retry --quarantined [--since TIME] [--error-contains TEXT] [--aggregate-type TYPE]")
}
