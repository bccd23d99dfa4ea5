package deploy

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestInventoryDatabaseJob runs compose's inventory database job
// (deploy/postgres/create-inventory-db.sh) with this machine's psql against
// its PostgreSQL, twice: the first run creates the database (a fresh
// pgdata volume, or one from before the inventory joined the stack), the
// second (every later `docker compose up`) finds it and succeeds without
// touching it. A server it cannot reach fails the job.
func TestInventoryDatabaseJob(t *testing.T) {
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatalf("psql is not on PATH: the job runs the postgres image's psql; install PostgreSQL's client")
	}
	admin, err := url.Parse(testdb.AdminURL())
	require.NoError(t, err)
	pwd, _ := admin.User.Password()
	port := admin.Port()
	if port == "" {
		port = "5432"
	}
	db := "outflow_test_inventory_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.AdminURL())
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)")
		_ = conn.Close(ctx)
	})
	env := []string{"PGHOST=" + admin.Hostname(), "PGPORT=" + port, "PGUSER=" + admin.User.Username(),
		"PGPASSWORD=" + pwd, "PGDATABASE=" + strings.TrimPrefix(admin.Path, "/"), "INVENTORY_DB=" + db}
	exists := func() bool {
		var n int
		require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", db).Scan(&n))
		return n == 1
	}

	require.False(t, exists())
	out := runScript(t, "postgres/create-inventory-db.sh", env)
	require.Contains(t, out, "CREATE DATABASE")
	require.Contains(t, out, "inventory database "+db+" is there")
	require.True(t, exists())

	// What the inventory migrated into it stays: a second run leaves it be.
	dbURL := *admin
	dbURL.Path = "/" + db
	c, err := pgx.Connect(ctx, dbURL.String())
	require.NoError(t, err)
	_, err = c.Exec(ctx, "CREATE TABLE kept (id int)")
	require.NoError(t, err)
	require.NoError(t, c.Close(ctx))

	out = runScript(t, "postgres/create-inventory-db.sh", env)
	require.NotContains(t, out, "CREATE DATABASE", "a second run creates nothing")
	require.Contains(t, out, "inventory database "+db+" is there")
	c, err = pgx.Connect(ctx, dbURL.String())
	require.NoError(t, err)
	var kept bool
	require.NoError(t, c.QueryRow(ctx, "SELECT to_regclass('kept') IS NOT NULL").Scan(&kept))
	require.NoError(t, c.Close(ctx))
	require.True(t, kept, "the existing database is left as it was")

	// A server it cannot reach fails the job (compose retries it, then
	// reports it).
	cmd := exec.Command("sh", "postgres/create-inventory-db.sh")
	cmd.Env = append(os.Environ(), append(slices.Clone(env), "PGPORT=1")...)
	b, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", b)
}
