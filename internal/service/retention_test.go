package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/outbox/outboxops"
)

func TestRetention(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) *service.Env {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return service.NewEnv(func(k string) string { return m[k] })
	}
	e := env()
	require.Equal(t, outboxops.ScheduleConfig{Retention: 168 * time.Hour, Interval: 10 * time.Minute, BatchSize: 1000}, service.Retention(e))
	require.NoError(t, e.Err())
	e = env("OUTFLOW_RETENTION", "0")
	require.Zero(t, service.Retention(e).Retention, "0 disables cleanup")
	require.NoError(t, e.Err())
	e = env("OUTFLOW_RETENTION", "24h", "OUTFLOW_CLEANUP_INTERVAL", "1m", "OUTFLOW_CLEANUP_BATCH", "50")
	require.Equal(t, outboxops.ScheduleConfig{Retention: 24 * time.Hour, Interval: time.Minute, BatchSize: 50}, service.Retention(e))
	require.NoError(t, e.Err())
	for _, bad := range [][]string{
		{"OUTFLOW_RETENTION", "7d"},
		{"OUTFLOW_CLEANUP_INTERVAL", "0"},
		{"OUTFLOW_CLEANUP_BATCH", "0"},
		{"OUTFLOW_CLEANUP_BATCH", "100001"},
		{"OUTFLOW_RETENTION", "48h", "OUTFLOW_INBOX_RETENTION", "24h"},
	} {
		e := env(bad...)
		service.Retention(e)
		require.Error(t, e.Err(), "%v", bad)
		require.Contains(t, e.Err().Error(), bad[0], "the error names the variable")
	}
}
