package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
)

// TestReplay: the published events of a window are counted, refused without
// --yes when nobody can confirm, then flagged, unpublished and republished by
// a relay with Event.Replay set; an interactive "n" replays nothing.
func TestReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	evs := b.enqueue(t, "o-replay", "OrderCreated", "OrderCancelled")
	other := b.enqueue(t, "o-other", "OrderCreated")[0]
	b.exec(t, `UPDATE outbox_events SET published_at = now() WHERE event_id = ANY($1)`, idsOf(append(evs, other)...))
	from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	to := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	args := []string{"replay", "--from", from, "--to", to, "--aggregate", "o-replay"}

	// Not a terminal, no --yes: refused, nothing changed.
	var out, errb bytes.Buffer
	env := &cliEnv{stdout: &out, stderr: &errb, logger: quiet(), databaseURL: b.url, stdin: strings.NewReader(""), actor: "test"}
	require.ErrorIs(t, runReplay(b.ctx, env, args[1:]), errUsage)
	require.Contains(t, out.String(), "2 published events of aggregate o-replay")
	require.Contains(t, errb.String(), "pass --yes")
	// A terminal answering "n": nothing changed.
	env.interactive, env.stdin = true, strings.NewReader("n\n")
	require.ErrorContains(t, runReplay(b.ctx, env, args[1:]), "not confirmed")
	require.NotNil(t, b.row(t, evs[0].ID).PublishedAt)

	r := b.ok(t, append(args, "--yes")...)
	require.Contains(t, r.stdout, "replayed 2 events")
	require.Contains(t, r.stderr, "events replayed")
	for _, e := range evs {
		row := b.row(t, e.ID)
		require.Nil(t, row.PublishedAt)
		require.NotNil(t, row.ReplayRequestedAt)
		require.Zero(t, row.Attempts)
	}
	require.NotNil(t, b.row(t, other.ID).PublishedAt, "other aggregates are not replayed")

	acked := b.runRelay(t)
	b.waitPublished(t, idsOf(evs...)...)
	var replayed []outbox.Event
	require.Eventually(t, func() bool { replayed = acked(); return len(replayed) == 2 }, 5*time.Second, 10*time.Millisecond)
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
}
