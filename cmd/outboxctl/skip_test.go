package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSkip: only a quarantined event can be skipped; the skip records the
// reason and the actor (given, or $USER@hostname), and the aggregate's later
// events flow again through a running relay, without the skipped one.
func TestSkip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	evs := b.enqueue(t, "o-skip", "OrderCreated", "OrderCancelled")
	dflt := b.enqueue(t, "o-default-actor", "OrderCreated")[0]

	r := b.ctl(t, "skip", evs[0].ID.String(), "--reason", "bad payload")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "it is pending, not quarantined")

	b.quarantine(t, evs[0].ID, "payload fails validation")
	b.quarantine(t, dflt.ID, "payload fails validation")
	acked := b.runRelay(t)
	r = b.ok(t, "skip", evs[0].ID.String(), "--reason", "SKU deleted; refunded by hand (OPS-42)", "--actor", "ada")
	require.Contains(t, r.stdout, "skipped "+evs[0].ID.String())
	require.Contains(t, r.stderr, "event skipped")
	row := b.row(t, evs[0].ID)
	require.NotNil(t, row.SkippedAt)
	require.Equal(t, "ada", *row.SkippedBy)
	require.Equal(t, "SKU deleted; refunded by hand (OPS-42)", *row.SkipReason)

	b.waitPublished(t, evs[1].ID)
	for _, e := range acked() {
		require.NotEqual(t, evs[0].ID, e.ID, "a skipped event is never published")
	}
	require.Nil(t, b.row(t, evs[0].ID).PublishedAt)

	b.ok(t, "skip", dflt.ID.String(), "--reason", "duplicate order")
	require.Regexp(t, `^.+@.+$`, *b.row(t, dflt.ID).SkippedBy, "actor defaults to $USER@hostname")

	r = b.ctl(t, "skip", evs[0].ID.String(), "--reason", "again")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "already skipped by ada")
}
