package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

func TestParseFlags(t *testing.T) {
	t.Parallel()
	cfg, err := parseFlags(nil, io.Discard, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "full", cfg.mode())
	require.Equal(t, 1_000_000, cfg.claimPublished)
	require.True(t, cfg.runs("idle"))
	require.True(t, cfg.needsTemporal())

	cfg, err = parseFlags([]string{"-quick", "-only", "noop, claim"}, io.Discard, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "quick", cfg.mode())
	require.Equal(t, 100_000, cfg.claimPublished)
	require.True(t, cfg.runs("claim"))
	require.False(t, cfg.runs("handoff"))
	require.False(t, cfg.needsTemporal(), "no Temporal needed for database-only phases")

	full := fullConfig()
	require.GreaterOrEqual(t, full.handoffRuns, 5, "handoff_ratio is the median of a series of at least 5 runs")
	require.GreaterOrEqual(t, full.handoffRounds, 8, "of at least 8 rounds each")
	cfg, err = parseFlags([]string{"-handoff-rounds", "12", "-handoff-runs", "3"}, io.Discard, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 12, cfg.handoffRounds)
	require.Equal(t, 3, cfg.handoffRuns)
	require.Equal(t, full.handoffEvents, cfg.handoffEvents, "only the rounds and runs change")
	_, err = parseFlags([]string{"-handoff-rounds", "-1"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "want at least 1")
	_, err = parseFlags([]string{"-handoff-runs", "-1"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "want at least 1")

	_, err = parseFlags([]string{"-only", "nope"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, `unknown phase "nope"`)
	_, err = parseFlags([]string{"extra"}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "no arguments expected")
}

// TestStatements: every statement of bench.sql is bound in sql.go and
// reads the columns the database describes.
func TestStatements(t *testing.T) {
	t.Parallel()
	testdb.CheckStatements(t, queries, statements...)
}
