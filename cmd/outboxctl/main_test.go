package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/ctl"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ctltest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestMain stops the private wal_level=logical server that the CDC slot
// test starts.
func TestMain(m *testing.M) {
	code := m.Run()
	testdb.StopLogical()
	os.Exit(code)
}

func TestUsageAndUnknownCommand(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	require.Equal(t, 2, run(context.Background(), nil, &out, &errb))
	require.Contains(t, errb.String(), "migrate")
	errb.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"frobnicate"}, &out, &errb))
	require.Contains(t, errb.String(), `unknown command "frobnicate"`)
}

// TestMigrateBringsAnEmptyDatabaseUp starts from a database with no schema at
// all: the order app's binaries refuse it naming `outboxctl migrate
// --order-app`, and after that command they accept it. A second run, with
// or without the flag (the order app is installed now), is a no-op.
func TestMigrateBringsAnEmptyDatabaseUp(t *testing.T) {
	t.Parallel()
	url := testdb.NewEmptyURL(t)
	ctx := context.Background()

	_, err := database.OpenChecked(ctx, url)
	require.ErrorIs(t, err, migrations.ErrOutdated)
	require.ErrorContains(t, err, "outboxctl migrate --order-app")

	// The first run says what it applied, file by file; the second that
	// there was nothing to do.
	for i, want := range [][]string{{
		"outbox schema (outflow_schema_version): applied 15 migrations: 00001_init.sql, 00002_operations.sql, 00004_outbox_fillfactor.sql, 00006_replay_horizon.sql, 00010_outbox_bulk_retries.sql, 00012_log.sql, 00013_log_bulk_retries.sql, 00014_log_retention.sql, 00015_log_relays.sql, 00016_skip_tombstones.sql, 00017_log_lanes.sql, 00018_relay_source.sql, 00019_trace_context.sql, 00020_cdc_publication.sql, 00021_sink_breakers.sql; now at version 21\n",
		"order app schema (outflow_orders_schema_version): applied 7 migrations: 00001_init.sql, 00002_operations.sql, 00003_shipping_address.sql, 00005_idempotency_response_bytes.sql, 00007_projection_horizons.sql, 00008_customer_keys.sql, 00011_order_incidents.sql; now at version 11\n",
	}, {
		"outbox schema (outflow_schema_version): already up to date at version 21\n",
		"order app schema (outflow_orders_schema_version): already up to date at version 11\n",
	}} {
		var out, errb bytes.Buffer
		env := &ctl.Env{Stdout: &out, Stderr: &errb, Logger: nil, DatabaseURL: url}
		args := []string{"--order-app"}
		if i == 1 {
			args = nil
		}
		require.NoError(t, commands["migrate"].Run(ctx, env, args), errb.String())
		require.Equal(t, strings.Join(want, ""), out.String(), "run %d", i)
	}
	pool, err := database.OpenChecked(ctx, url)
	require.NoError(t, err)
	pool.Close()

	check, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer check.Close()
	var n int
	require.NoError(t, check.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('orders','outbox_events','processed_events','idempotency_keys')").Scan(&n))
	require.Equal(t, 4, n)
	require.NoError(t, check.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'goose_db_version'").Scan(&n))
	require.Zero(t, n, "outflow never uses goose's default version table")
}

// TestMigrateOutboxOnly: `migrate --outbox-only` on a service's own database
// adds the outbox's tables and none of the order app's, and the outbox
// commands, which refused the database before, work on it.
func TestMigrateOutboxOnly(t *testing.T) {
	t.Parallel()
	url := testdb.NewEmptyURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := &ctltest.Bundle{Ctx: ctx, URL: url, Pool: testdb.Open(t, url), Main: run}
	b.Exec(t, `CREATE TABLE invoices (id bigint PRIMARY KEY)`)

	r := b.Ctl(t, "status")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "run `outboxctl migrate` against this DATABASE_URL")

	r = b.OK(t, "migrate", "--outbox-only")
	require.Contains(t, r.Stdout, "outbox schema (outflow_schema_version): applied 15 migrations: 00001_init.sql")
	require.NotContains(t, r.Stdout, "order app")
	var n int
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename IN ('orders', 'idempotency_keys', 'customer_keys')`).Scan(&n))
	require.Zero(t, n, "no order app table in a service's database")

	ev, err := outbox.NewEvent("invoice", "inv-1", "InvoiceIssued", 1, map[string]int{"amount": 100})
	require.NoError(t, err)
	enqueued := testdb.Enqueue(t, b.Pool, ev)
	r = b.OK(t, "list", "--pending")
	require.Contains(t, r.Stdout, enqueued[0].ID.String()+"  InvoiceIssued  invoice/inv-1")
	b.OK(t, "status")
}

// TestHelpAndUsageErrors: `help` lists every command, `help CMD` shows its
// flags, and malformed invocations exit 2 with a message saying what to do.
func TestHelpAndUsageErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(b.Ctx, []string{"help"}, &out, &errb))
	for _, c := range []string{"migrate", "status", "list", "retry", "skip", "replay", "cleanup"} {
		require.Contains(t, out.String(), "  "+c+" ")
	}
	out.Reset()
	require.Equal(t, 0, run(b.Ctx, []string{"help", "skip"}, &out, &errb))
	require.Contains(t, out.String(), "usage: outboxctl skip EVENT_ID --reason TEXT")
	require.Contains(t, out.String(), "-actor")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"retry"}, "want exactly one EVENT_ID"},
		{[]string{"retry", "not-a-uuid"}, `EVENT_ID "not-a-uuid" is not a UUID`},
		{[]string{"skip", "0190f7c2-0000-7000-8000-000000000000"}, "--reason is mandatory"},
		{[]string{"list", "--pending", "--quarantined"}, "exclude each other"},
		{[]string{"list", "--limit", "0"}, "out of range"},
		{[]string{"status", "--frobnicate"}, "flag provided but not defined"},
		{[]string{"replay", "--to", "2025-01-01T00:00:00Z"}, "--from (or --since) is mandatory"},
		{[]string{"replay", "--from", "yesterday", "--to", "2025-01-01T00:00:00Z"}, "want an RFC 3339 time"},
		{[]string{"replay", "--from", "2025-01-02T00:00:00Z", "--to", "2025-01-01T00:00:00Z"}, "must be after"},
		{[]string{"cleanup"}, "--retention is mandatory"},
		{[]string{"cleanup", "--retention", "168h", "--inbox-retention", "1h"}, "shorter than --retention"},
	} {
		r := b.Ctl(t, tc.args...)
		require.Equal(t, 2, r.Code, "%v: %s", tc.args, r.Stderr)
		require.Contains(t, r.Stderr, tc.want, "%v", tc.args)
	}
}

// TestMigrateOnAFreshDatabaseIsTheOutboxAlone: a plain `outboxctl migrate`
// on a database with no schema creates the outbox's tables and none of the
// order app's (a team's database is not given outflow's example tables),
// and it refuses PostgreSQL's own database, which a DATABASE_URL left at
// its default names, unless --system-database says it is meant.
func TestMigrateOnAFreshDatabaseIsTheOutboxAlone(t *testing.T) {
	t.Parallel()
	url := testdb.NewEmptyURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := &ctltest.Bundle{Ctx: ctx, URL: url, Pool: testdb.Open(t, url), Main: run}

	r := b.OK(t, "migrate")
	require.Contains(t, r.Stdout, "outbox schema (outflow_schema_version): applied 15 migrations")
	require.NotContains(t, r.Stdout, "order app")
	rows, err := b.Pool.Query(ctx, `SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'outbox%' ORDER BY 1`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"outflow_schema_version", "processed_events"}, tables, "only the outbox's tables")

	r = b.Ctl(t, "migrate", "--order-app", "--outbox-only")
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "--order-app and --outbox-only contradict each other")

	// PostgreSQL's own database: refused, naming the fix, nothing created.
	system := testdb.AdminURL()
	admin := testdb.Open(t, system)
	schemaTables := func() (n int) {
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename LIKE 'outbox%' OR tablename LIKE 'outflow%'`).Scan(&n))
		return n
	}
	before := schemaTables()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"migrate", "--database-url", system}, &out, &errb)
	require.Equal(t, 1, code, out.String())
	require.Contains(t, errb.String(), `refusing to migrate "postgres", PostgreSQL's own database`)
	require.Contains(t, errb.String(), "--system-database")
	require.Equal(t, before, schemaTables(), "nothing was created in the system database")
}
