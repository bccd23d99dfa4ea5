package main

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/relaycmd"
)

func TestReplayHorizonRelations(t *testing.T) {
	t.Parallel()
	h, err := relaycmd.ReplayHorizon(0, 24*time.Hour, "default")
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, h, "unset: the namespace retention")
	h, err = relaycmd.ReplayHorizon(6*time.Hour, 24*time.Hour, "default")
	require.NoError(t, err)
	require.Equal(t, 6*time.Hour, h)
	_, err = relaycmd.ReplayHorizon(48*time.Hour, 24*time.Hour, "default")
	require.ErrorContains(t, err, "OUTFLOW_REPLAY_HORIZON=48h0m0s is longer than the retention of Temporal namespace \"default\" (24h0m0s)")

	_, err = relaycmd.ReadConfig(func(string) string { return "soon" }, orderApp)
	require.ErrorContains(t, err, "OUTFLOW_REPLAY_HORIZON=\"soon\"")
}

// TestReplayHorizonBeyondRetentionStopsTheStarter: a replay horizon that
// reaches behind the namespace retention is refused at start-up with a
// message naming both settings, and nothing is recorded.
func TestReplayHorizonBeyondRetentionStopsTheStarter(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	p := startStarter(t, url, "unused", "OUTFLOW_REPLAY_HORIZON=100000h")
	err := p.wait(t, 30*time.Second)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, exit.ExitCode())
	require.Contains(t, p.output(), "OUTFLOW_REPLAY_HORIZON=100000h0m0s is longer than the retention of Temporal namespace")
}

// TestStarterRecordsTheReplayHorizon: once Temporal answers, the starter
// records the namespace retention as the replay horizon, which `outboxctl
// replay` checks.
func TestStarterRecordsTheReplayHorizon(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	p := startStarter(t, url, "unused-"+t.Name())
	t.Cleanup(func() { p.terminate(t) })
	var horizon time.Duration
	var reason string
	require.Eventually(t, func() bool {
		horizon, reason, err = outboxops.ReplayHorizon(context.Background(), pool)
		return err == nil && horizon > 0
	}, 30*time.Second, 50*time.Millisecond)
	require.Contains(t, reason, `Temporal namespace "default" keeps closed workflows`)
}
