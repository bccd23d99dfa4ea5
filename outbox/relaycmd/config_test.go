package relaycmd_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/relaycmd"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// read is ReadConfig over kv (name, value, ...) with one route, so that
// only kv's settings can be wrong.
func read(kv ...string) (relaycmd.Config, error) {
	m := map[string]string{relaycmd.RoutesEnv: "A=B"}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return relaycmd.ReadConfig(func(k string) string { return m[k] }, relaycmd.Defaults{})
}

// TestRetention: the cleanup schedule's defaults, 0 turning it off, and
// each malformed setting named (moved from internal/service).
func TestRetention(t *testing.T) {
	t.Parallel()
	c, err := read()
	require.NoError(t, err)
	require.Equal(t, outboxops.ScheduleConfig{Retention: 168 * time.Hour, Interval: 10 * time.Minute, BatchSize: 1000}, c.Cleanup)
	c, err = read("OUTFLOW_RETENTION", "0")
	require.NoError(t, err)
	require.Zero(t, c.Cleanup.Retention, "0 disables cleanup")
	c, err = read("OUTFLOW_RETENTION", "24h", "OUTFLOW_CLEANUP_INTERVAL", "1m", "OUTFLOW_CLEANUP_BATCH", "50")
	require.NoError(t, err)
	require.Equal(t, outboxops.ScheduleConfig{Retention: 24 * time.Hour, Interval: time.Minute, BatchSize: 50}, c.Cleanup)
	for _, bad := range [][]string{
		{"OUTFLOW_RETENTION", "7d"},
		{"OUTFLOW_CLEANUP_INTERVAL", "0"},
		{"OUTFLOW_CLEANUP_BATCH", "0"},
		{"OUTFLOW_CLEANUP_BATCH", "100001"},
		{"OUTFLOW_RETENTION", "48h", "OUTFLOW_INBOX_RETENTION", "24h"},
	} {
		_, err := read(bad...)
		require.Error(t, err, "%v", bad)
		require.Contains(t, err.Error(), bad[0], "the error names the variable")
	}
}

// TestDefaults: a binary's default routes and task queue apply only where
// OUTFLOW_ROUTES and OUTFLOW_TASK_QUEUE are unset.
func TestDefaults(t *testing.T) {
	t.Parallel()
	def := relaycmd.Defaults{
		Routes:    func() (temporalpub.Routes, string) { return temporalpub.Routes{"X": {Workflow: "Y"}}, "the app's" },
		TaskQueue: "app",
	}
	c, err := relaycmd.ReadConfig(func(string) string { return "" }, def)
	require.NoError(t, err)
	require.Equal(t, "the app's", c.RoutesFrom)
	require.Equal(t, "app", c.TaskQueue)
	c, err = relaycmd.ReadConfig(func(k string) string {
		return map[string]string{relaycmd.RoutesEnv: "A=B", relaycmd.TaskQueueEnv: "q"}[k]
	}, def)
	require.NoError(t, err)
	require.Equal(t, "OUTFLOW_ROUTES=A=B", c.RoutesFrom)
	require.Equal(t, "q", c.TaskQueue)
	require.Contains(t, c.Routes, "A")
	require.NotContains(t, c.Routes, "X")
}
