package outboxops_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxops"
)

// TestPlanReplayLogRefusesBeforeTheLogsHorizon: once the log's retention
// is dropping a range (retiring, issue 37) or has dropped it, a log replay
// whose window starts before that range's seal is refused (its events may
// be gone), one after it is not.
func TestPlanReplayLogRefusesBeforeTheLogsHorizon(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	window := func(from time.Time) outboxops.ReplayOptions {
		return outboxops.ReplayOptions{AggregateType: "order", AggregateID: "o-1", From: from, To: time.Now().Add(time.Hour)}
	}
	_, err := outboxops.PlanReplay(ctx, pool, window(time.Now().Add(-72*time.Hour)))
	require.NoError(t, err, "nothing dropped yet")

	// A range retiring, as RetainLog's T3 leaves it for its drop, sealed two
	// days ago.
	_, err = pool.Exec(ctx, `INSERT INTO outbox_log_ranges (lo, hi, name, sealed_at, sealed_xmax, retiring_at)
	                         VALUES (-20, -10, 'outbox_log_going', now() - interval '2 days', 1, now())`)
	require.NoError(t, err)
	_, err = outboxops.PlanReplay(ctx, pool, window(time.Now().Add(-72*time.Hour)))
	require.ErrorIs(t, err, outboxops.ErrReplayWindow, "the retiring range's events may be gone at any moment")
	require.ErrorContains(t, err, "before the log's retention horizon")
	_, err = outboxops.PlanReplay(ctx, pool, window(time.Now().Add(-48*time.Hour)))
	require.NoError(t, err)

	// A range dropped, as RetainLog records it, sealed a day ago.
	_, err = pool.Exec(ctx, `INSERT INTO outbox_log_ranges (lo, hi, name, sealed_at, sealed_xmax, retiring_at, dropped_at)
	                         VALUES (-10, -5, 'outbox_log_gone', now() - interval '1 day', 1, now(), now())`)
	require.NoError(t, err)
	_, err = outboxops.PlanReplay(ctx, pool, window(time.Now().Add(-48*time.Hour)))
	require.ErrorIs(t, err, outboxops.ErrReplayWindow)
	require.ErrorContains(t, err, "before the log's retention horizon")
	_, err = outboxops.PlanReplay(ctx, pool, window(time.Now().Add(-time.Hour)))
	require.NoError(t, err)
}
