package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxops"
)

// TestConfigReadsTheRetention: the retention variables have the starter's
// defaults, and a malformed one is refused naming it, with the other
// settings' errors.
func TestConfigReadsTheRetention(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	c, err := configFromEnv(env())
	require.NoError(t, err)
	require.Equal(t, outboxops.ScheduleConfig{Retention: 168 * time.Hour, Interval: 10 * time.Minute, BatchSize: 1000}, c.retention)
	c, err = configFromEnv(env("OUTFLOW_RETENTION", "0"))
	require.NoError(t, err)
	require.Zero(t, c.retention.Retention, "0 turns the cleanup off")

	_, err = configFromEnv(env("OUTFLOW_RETENTION", "7d", "OUTFLOW_CLEANUP_BATCH", "0", "INVENTORY_ADDR", "nope"))
	require.Error(t, err)
	for _, name := range []string{"OUTFLOW_RETENTION", "OUTFLOW_CLEANUP_BATCH", "INVENTORY_ADDR"} {
		require.Contains(t, err.Error(), name)
	}
}
