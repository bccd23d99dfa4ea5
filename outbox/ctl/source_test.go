package ctl

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxops"
)

// TestSourceCommand: `outboxctl source` prints the recorded source and
// what each table holds; `source set` prints a plan and, without --yes and
// without a terminal, changes nothing; with --yes it records the change,
// which the producers' next enqueue follows; a source it does not know is
// a usage error that lists them.
func TestSourceCommand(t *testing.T) {
	b := setup(t)
	b.Enqueue(t, "o-1", "OrderCreated")

	r := b.OK(t, "source")
	require.Contains(t, r.Stdout, "relay source: poll (since ")
	require.Contains(t, r.Stdout, "by migration)")
	require.Contains(t, r.Stdout, "outbox_events: 1 to publish, 0 quarantined")

	// Not a terminal, no --yes: the plan, then a dry run.
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb, Logger: quiet(), DatabaseURL: b.URL, Stdin: strings.NewReader(""), Actor: "test@host"}
	require.NoError(t, commands["source"].Run(b.Ctx, env, []string{"set", "log", "--reason", "faster drains"}))
	require.Contains(t, out.String(), "plan: poll → log")
	require.Contains(t, out.String(), "producers write to the log (outbox_log) from their next transaction")
	require.Contains(t, out.String(), "dry run (stdin is not a terminal, so there is nobody to confirm): nothing was changed; pass --yes to switch to log")
	st, err := outboxops.Source(b.Ctx, b.Pool)
	require.NoError(t, err)
	require.Equal(t, outboxops.SourcePoll, st.Source, "a dry run changes nothing")

	// A terminal answering "n": nothing changed.
	env.Interactive, env.Stdin = true, strings.NewReader("n\n")
	require.ErrorContains(t, commands["source"].Run(b.Ctx, env, []string{"set", "log"}), "not confirmed; nothing was changed")

	r = b.OK(t, "source", "set", "log", "--yes", "--reason", "faster drains", "--actor", "ops@example.com")
	require.Contains(t, r.Stdout, "relay source: poll → log at ")
	st, err = outboxops.Source(b.Ctx, b.Pool)
	require.NoError(t, err)
	require.Equal(t, outboxops.SourceLog, st.Source)
	require.Equal(t, "ops@example.com", st.ChangedBy)
	require.Equal(t, "faster drains", st.Reason)

	logged := b.Enqueue(t, "o-1", "OrderCancelled")[0]
	_, err = outboxops.LogEventByID(b.Ctx, b.Pool, logged.ID)
	require.NoError(t, err, "the producers' next enqueue follows the recorded source: the event is in the log")
	r = b.OK(t, "source")
	require.Contains(t, r.Stdout, "log:           1 to publish")

	r = b.OK(t, "source", "set", "log", "--yes")
	require.Contains(t, r.Stdout, "the source is log already; nothing to change")

	r = b.Ctl(t, "source", "set", "kafka")
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, `unknown relay source "kafka": want poll`)
	r = b.Ctl(t, "source", "sideways")
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "`outboxctl source set poll|cdc|log` changes it")
}

// TestSourceSetCDCNeedsLogicalWAL: a switch to cdc on a server without
// wal_level=logical is refused, saying what to change, and changes nothing.
func TestSourceSetCDCNeedsLogicalWAL(t *testing.T) {
	b := setup(t)
	var level string
	require.NoError(t, b.Pool.QueryRow(b.Ctx, `SELECT current_setting('wal_level')`).Scan(&level))
	if level == "logical" {
		t.Skip("this server runs wal_level=logical: the refusal cannot be shown here")
	}
	r := b.Ctl(t, "source", "set", "cdc", "--yes")
	require.Equal(t, 1, r.Code, r.Stdout)
	require.Contains(t, r.Stderr, "wal_level=logical")
	require.Contains(t, r.Stderr, "nothing was changed")
	st, err := outboxops.Source(b.Ctx, b.Pool)
	require.NoError(t, err)
	require.Equal(t, outboxops.SourcePoll, st.Source)
}
