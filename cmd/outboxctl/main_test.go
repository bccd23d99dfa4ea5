package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/testdb"
	"github.com/outflow/outflow/migrations"
)

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
// all: other binaries refuse it naming `outboxctl migrate`, and after the
// command they accept it. A second run is a no-op.
func TestMigrateBringsAnEmptyDatabaseUp(t *testing.T) {
	t.Parallel()
	url := testdb.NewEmptyURL(t)
	ctx := context.Background()

	_, err := database.OpenChecked(ctx, url)
	require.ErrorIs(t, err, migrations.ErrOutdated)
	require.ErrorContains(t, err, "outboxctl migrate")

	for range 2 {
		var out, errb bytes.Buffer
		env := &cliEnv{stdout: &out, stderr: &errb, logger: nil, databaseURL: url}
		require.NoError(t, runMigrate(ctx, env, nil), errb.String())
		require.Contains(t, out.String(), "schema is at version")
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
}
