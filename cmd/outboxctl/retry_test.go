package main

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestRetry: a quarantined event becomes available now with attempts 0 and
// its quarantine cleared, the write is logged, and a relay publishes it;
// unknown and published events are refused with exit 1 and advice.
func TestRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	evs := b.enqueue(t, "o-retry", "OrderCreated", "OrderCancelled")
	b.quarantine(t, evs[0].ID, "boom")
	done := b.enqueue(t, "o-done", "OrderCreated")[0]
	b.exec(t, `UPDATE outbox_events SET published_at = now() WHERE event_id = $1`, done.ID)

	r := b.ok(t, "retry", evs[0].ID.String())
	require.Contains(t, r.stdout, "quarantined -> pending, attempts 20 -> 0")
	require.Contains(t, r.stderr, "event retried")
	require.Contains(t, r.stderr, "actor=")
	row := b.row(t, evs[0].ID)
	require.Nil(t, row.QuarantinedAt)
	require.Zero(t, row.Attempts)
	require.WithinDuration(t, time.Now(), row.AvailableAt, 5*time.Second)

	b.runRelay(t)
	b.waitPublished(t, idsOf(evs...)...)

	r = b.ctl(t, "retry", uuid.NewString())
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "no outbox event has this ID")
	r = b.ctl(t, "retry", done.ID.String())
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "it was published at")
	require.Contains(t, r.stderr, "use replay")
}
