package main

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/dev/promtest"
	"github.com/outflow/outflow/internal/dev/testdb"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
)

// TestCleanupSchedule: the starter's schedule deletes old published events
// at once and again on later passes, never an unpublished one, and counts
// the deleted rows in outbox_cleanup_deleted_total{table}.
func TestCleanupSchedule(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()
	first := oldPublished(t, pool, 5)
	unpublished := enqueueOrders(t, pool, 1)[0]
	outboxtest.Force(t, pool, outboxtest.Match{ID: unpublished.ID}, outboxtest.SetOccurred(30*24*time.Hour))

	reg := prometheus.NewRegistry()
	sched, err := newCleanupSchedule(pool, cleanupConfig{Retention: time.Hour, Interval: 50 * time.Millisecond, BatchSize: 2},
		nil, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); sched.run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })

	outboxtest.WaitFor(t, pool, outboxtest.Match{}, 10*time.Second, gone(first), "first pass")
	second := oldPublished(t, pool, 3)
	outboxtest.WaitFor(t, pool, outboxtest.Match{}, 10*time.Second, gone(second), "a later pass")
	outboxtest.RequireEnqueued(t, pool, outboxtest.Match{ID: unpublished.ID}) // an unpublished event is never deleted
	require.Eventually(t, func() bool { return deletedTotal(t, reg, outboxops.CleanupTableEvents) == 8 }, 5*time.Second, 20*time.Millisecond)
}

func TestCleanupConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) *service.Env {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return service.NewEnv(func(k string) string { return m[k] })
	}
	e := env()
	require.Equal(t, cleanupConfig{Retention: 168 * time.Hour, Interval: 10 * time.Minute, BatchSize: 1000}, cleanupConfigFromEnv(e))
	require.NoError(t, e.Err())
	e = env("OUTFLOW_RETENTION", "0")
	require.Zero(t, cleanupConfigFromEnv(e).Retention, "0 disables cleanup")
	require.NoError(t, e.Err())
	e = env("OUTFLOW_RETENTION", "24h", "OUTFLOW_CLEANUP_INTERVAL", "1m", "OUTFLOW_CLEANUP_BATCH", "50")
	require.Equal(t, cleanupConfig{Retention: 24 * time.Hour, Interval: time.Minute, BatchSize: 50}, cleanupConfigFromEnv(e))
	require.NoError(t, e.Err())
	for _, bad := range [][]string{
		{"OUTFLOW_RETENTION", "7d"},
		{"OUTFLOW_CLEANUP_INTERVAL", "0"},
		{"OUTFLOW_CLEANUP_BATCH", "0"},
		{"OUTFLOW_CLEANUP_BATCH", "100001"},
		{"OUTFLOW_RETENTION", "48h", "OUTFLOW_INBOX_RETENTION", "24h"},
	} {
		e := env(bad...)
		cleanupConfigFromEnv(e)
		require.Error(t, e.Err(), "%v", bad)
		require.Contains(t, e.Err().Error(), bad[0], "the error names the variable")
	}
}

// oldPublished commits n order events published ten days ago.
func oldPublished(t *testing.T, pool *pgxpool.Pool, n int) []uuid.UUID {
	t.Helper()
	var ids []uuid.UUID
	for _, e := range enqueueOrders(t, pool, n) {
		outboxtest.Force(t, pool, outboxtest.Match{ID: e.ID}, outboxtest.SetPublished(10*24*time.Hour))
		ids = append(ids, e.ID)
	}
	return ids
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

func deletedTotal(t *testing.T, reg *prometheus.Registry, table string) float64 {
	t.Helper()
	return promtest.Total(t, reg, "outbox_cleanup_deleted_total", "table", table)
}

// TestCleanupScheduleRunsTheLogsRetention: for the log source the
// schedule makes the log's ranges ahead of its sequence even with cleanup
// off (OUTFLOW_RETENTION=0), so an enqueue never runs out of partitions.
func TestCleanupScheduleRunsTheLogsRetention(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `SELECT setval('outbox_log_pos', 25000000)`)
	require.NoError(t, err)
	sched, err := newCleanupSchedule(pool, cleanupConfig{Interval: 50 * time.Millisecond, BatchSize: 2, Log: true},
		nil, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); sched.run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool {
		r, err := outbox.LogRangesOf(ctx, pool)
		return err == nil && r.Ahead == 2
	}, 10*time.Second, 20*time.Millisecond, "two ranges ahead of the sequence")
}
