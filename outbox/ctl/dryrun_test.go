package ctl

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ctltest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// TestEveryChangeDryRunsWithoutYes runs the real binary, stdin not a
// terminal, for every command that changes data: without --yes each prints
// its plan and "dry run", exits 0 and leaves every table as it was; with
// --yes each changes something (so the dry run was not empty). A command
// whose -h offers --yes and that is missing here fails the test.
func TestEveryChangeDryRunsWithoutYes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	exe := proc.Build(t, "outboxctl", "../cmd/outboxctl")
	// Quarantined events of another service (an order's skip would need
	// the order app's order).
	q := []outbox.Event{b.EnqueueTyped(t, "invoice", "inv-1", "InvoiceIssued")}
	q2 := []outbox.Event{b.EnqueueTyped(t, "invoice", "inv-2", "InvoiceIssued")}
	q3 := []outbox.Event{b.EnqueueTyped(t, "invoice", "inv-3", "InvoiceIssued")}
	for _, id := range ctltest.IDs(q[0], q2[0], q3[0]) {
		b.Quarantine(t, id, "no route")
	}
	recent := b.Enqueue(t, "o-recent", "OrderCreated")[0]
	b.Force(t, recent.ID, outboxtest.SetOccurred(time.Hour), outboxtest.SetPublished(0))
	b.seedCleanup(t, 3)

	changes := [][]string{
		{"skip", q[0].ID.String(), "--reason", "the one rule"},
		{"retry", q2[0].ID.String()},
		{"retry", "--quarantined"},
		{"replay", "--since", "2h"},
		{"cleanup", "--retention", "168h"},
		{"source", "set", "log"},
	}
	covered := map[string]bool{}
	for _, args := range changes {
		covered[args[0]] = true
		before := b.snapshot(t)
		code, out := runExe(t, b, exe, args...)
		require.Zero(t, code, "outboxctl %v without --yes: %s", args, out)
		require.Contains(t, out, "dry run (stdin is not a terminal, so there is nobody to confirm): nothing was", "outboxctl %v", args)
		require.Contains(t, out, "pass --yes to", "outboxctl %v", args)
		require.Equal(t, before, b.snapshot(t), "outboxctl %v without --yes changed the database", args)

		code, out = runExe(t, b, exe, append(args, "--yes")...)
		require.Zero(t, code, "outboxctl %v --yes: %s", args, out)
		require.NotContains(t, out, "dry run (", "outboxctl %v --yes", args)
		require.NotEqual(t, before, b.snapshot(t), "outboxctl %v --yes changed nothing", args)
	}
	for name := range commands {
		code, out := runExe(t, b, exe, name, "-h")
		require.Zero(t, code, out)
		if strings.Contains(out, "\n  --yes\n") { // its flags offer --yes
			require.True(t, covered[name], "%s takes --yes, so it changes data: add it to this table", name)
		}
	}
}

// runExe runs the built binary on b's database with stdin not a terminal
// (/dev/null) and returns its exit status and its output.
func runExe(t *testing.T, b *testBundle, exe string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append(args, "--database-url", b.URL)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	}
	require.NoError(t, err)
	return 0, string(out)
}

// snapshot is every table of b's database, each as the hash of its rows.
func (b *testBundle) snapshot(t *testing.T) map[string]string {
	t.Helper()
	rows, err := b.Pool.Query(b.Ctx, `SELECT schemaname::text, tablename::text FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')`)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgx.Identifier, error) {
		var s, n string
		return pgx.Identifier{s, n}, r.Scan(&s, &n)
	})
	require.NoError(t, err)
	out := map[string]string{}
	for _, n := range names {
		var h string
		require.NoError(t, b.Pool.QueryRow(b.Ctx, `SELECT coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '') FROM `+n.Sanitize()+` t`).Scan(&h))
		out[n.Sanitize()] = h
	}
	return out
}
