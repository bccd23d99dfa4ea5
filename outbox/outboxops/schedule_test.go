package outboxops_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// runSchedule runs a schedule of cfg on pool until the test ends.
func runSchedule(t *testing.T, pool *pgxpool.Pool, cfg outboxops.ScheduleConfig) {
	t.Helper()
	sched, err := outboxops.NewSchedule(pool, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sched.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestScheduleCleansOnEveryPass: the schedule deletes old published events
// at once and again on later passes, never an unpublished one, and counts
// the deleted rows in outbox_cleanup_deleted_total{table}.
func TestScheduleCleansOnEveryPass(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	first := oldPublished(t, pool, 5)
	unpublished := testdb.Enqueue(t, pool, testdb.Event(t, "unpublished", "One"))[0]
	outboxtest.Force(t, pool, outboxtest.Match{ID: unpublished.ID}, outboxtest.SetOccurred(30*24*time.Hour))

	reg := prometheus.NewRegistry()
	runSchedule(t, pool, outboxops.ScheduleConfig{Retention: time.Hour, Interval: 50 * time.Millisecond, BatchSize: 2, Registerer: reg})

	outboxtest.WaitFor(t, pool, outboxtest.Match{}, 10*time.Second, gone(first), "first pass")
	second := oldPublished(t, pool, 3)
	outboxtest.WaitFor(t, pool, outboxtest.Match{}, 10*time.Second, gone(second), "a later pass")
	outboxtest.RequireEnqueued(t, pool, outboxtest.Match{ID: unpublished.ID}) // an unpublished event is never deleted
	require.Eventually(t, func() bool {
		return promtest.Total(t, reg, "outbox_cleanup_deleted_total", "table", outboxops.CleanupTableEvents) == 8
	}, 5*time.Second, 20*time.Millisecond)
}

// TestScheduleMakesTheLogsRangesWithCleanupOff: the schedule always
// makes the log's ranges ahead of its sequence even with cleanup off
// (Retention 0), so an enqueue never runs out of partitions.
func TestScheduleMakesTheLogsRangesWithCleanupOff(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `SELECT setval('outbox_log_pos', 25000000)`)
	require.NoError(t, err)
	runSchedule(t, pool, outboxops.ScheduleConfig{Interval: 50 * time.Millisecond})
	require.Eventually(t, func() bool {
		r, err := outboxops.LogRangesOf(ctx, pool)
		return err == nil && r.Ahead == 2
	}, 10*time.Second, 20*time.Millisecond, "two ranges ahead of the sequence")
}

// TestNewScheduleRefusesABadConfig: an inbox kept shorter than the events,
// a batch out of range or a negative duration is refused up front.
func TestNewScheduleRefusesABadConfig(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	for _, cfg := range []outboxops.ScheduleConfig{
		{Retention: 48 * time.Hour, InboxRetention: 24 * time.Hour},
		{Retention: time.Hour, BatchSize: 100001},
		{Retention: -time.Hour},
		{Interval: -time.Second},
	} {
		_, err := outboxops.NewSchedule(pool, cfg)
		require.Error(t, err, "%+v", cfg)
	}
	s, err := outboxops.NewSchedule(pool, outboxops.ScheduleConfig{Retention: time.Hour})
	require.NoError(t, err)
	require.Equal(t, outboxops.ScheduleConfig{Retention: time.Hour, InboxRetention: time.Hour,
		Interval: outboxops.ScheduleIntervalDefault, BatchSize: outboxops.CleanupBatchSizeDefault}, s.Config())
}

// oldPublished commits n events published ten days ago.
func oldPublished(t *testing.T, pool *pgxpool.Pool, n int) []uuid.UUID {
	t.Helper()
	var out []uuid.UUID
	for i := range n {
		e := testdb.Enqueue(t, pool, testdb.Event(t, fmt.Sprintf("old-%s-%d", uuid.NewString(), i), "One"))[0]
		outboxtest.Force(t, pool, outboxtest.Match{ID: e.ID}, outboxtest.SetPublished(10*24*time.Hour))
		out = append(out, e.ID)
	}
	return out
}

// gone is a condition for outboxtest.WaitFor: none of ids is left.
func gone(ids []uuid.UUID) func([]outboxtest.Event) bool {
	return func(rows []outboxtest.Event) bool {
		for _, r := range rows {
			if slices.Contains(ids, r.ID) {
				return false
			}
		}
		return true
	}
}
