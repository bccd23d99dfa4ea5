package deploy

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// toolDir returns a directory holding the program as name (a symlink to
// path), to put first on a script's PATH as the admin-tools image does.
func toolDir(t *testing.T, name, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	require.NoError(t, err)
	_, err = os.Stat(abs)
	require.NoError(t, err, "%s is missing: run `make tools` at the repository root (it builds bin/ from the Go module proxy)", abs)
	dir := t.TempDir()
	require.NoError(t, os.Symlink(abs, filepath.Join(dir, name)))
	return dir
}

func runScript(t *testing.T, script string, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", script)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s:\n%s", script, out)
	return string(out)
}

// TestSchemaJob runs compose's Temporal schema job
// (deploy/temporal/setup-schema.sh) with the server's own temporal-sql-tool
// against this machine's PostgreSQL, twice: the first run creates both
// databases and their schemas (read back: schema_version past 0.0), the
// second (every later `docker compose up`) finds them current and succeeds.
func TestSchemaJob(t *testing.T) {
	sqlTool := os.Getenv("OUTFLOW_TEMPORAL_SQL_TOOL")
	if sqlTool == "" {
		sqlTool = "../bin/temporal-sql-tool"
	}
	dir := toolDir(t, "temporal-sql-tool", sqlTool)
	admin, err := url.Parse(testdb.AdminURL())
	require.NoError(t, err)
	pwd, _ := admin.User.Password()
	if pwd == "" {
		pwd = "unused" // the script requires one; trust authentication ignores it
	}
	port := admin.Port()
	if port == "" {
		port = "5432"
	}
	suffix := strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	mainDB, visDB := "outflow_test_temporal_"+suffix, "outflow_test_temporal_vis_"+suffix
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testdb.AdminURL())
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, db := range []string{mainDB, visDB} {
			_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)")
		}
		_ = conn.Close(ctx)
	})
	env := []string{"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"POSTGRES_SEEDS=" + admin.Hostname(), "DB_PORT=" + port, "POSTGRES_USER=" + admin.User.Username(),
		"POSTGRES_PWD=" + pwd, "TEMPORAL_DB=" + mainDB, "VISIBILITY_DB=" + visDB}

	out := runScript(t, "temporal/setup-schema.sh", env)
	require.Contains(t, out, "temporal schemas are current")
	require.Contains(t, out, "database "+mainDB+" is there")
	for _, db := range []string{mainDB, visDB} {
		var version string
		dbURL := *admin
		dbURL.Path = "/" + db
		c, err := pgx.Connect(ctx, dbURL.String())
		require.NoError(t, err)
		require.NoError(t, c.QueryRow(ctx, "SELECT curr_version FROM schema_version").Scan(&version))
		_ = c.Close(ctx)
		require.NotEqual(t, "0.0", version, "%s's schema was brought to the server's version", db)
	}

	out = runScript(t, "temporal/setup-schema.sh", env)
	require.Contains(t, out, "temporal schemas are current", "a second run succeeds on current schemas")

	// A server it cannot reach fails the job (compose retries it, then
	// reports it).
	bad := append(slices.Clone(env), "DB_PORT=1")
	cmd := exec.Command("sh", "temporal/setup-schema.sh")
	cmd.Env = append(os.Environ(), bad...)
	b, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", b)
}

// TestNamespaceJob runs compose's namespace job
// (deploy/temporal/setup-namespace.sh) with the Temporal CLI against a dev
// server, twice: the namespace gets the retention and the OrderId Keyword
// search attribute, and a second run changes nothing and succeeds.
func TestNamespaceJob(t *testing.T) {
	cli, err := devserver.CLIPath()
	require.NoError(t, err)
	dir := toolDir(t, "temporal", cli)
	srv := devserver.Start(t, devserver.Options{})
	ns := "compose-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	env := []string{"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"TEMPORAL_ADDRESS=" + srv.Address(), "NAMESPACE=" + ns, "RETENTION=168h"}

	// The first run may find the frontend not yet SERVING: it exits 1 and
	// compose runs it again (restart: on-failure), as this does.
	var out string
	for try := 1; ; try++ {
		cmd := exec.Command("sh", "temporal/setup-namespace.sh")
		cmd.Env = append(os.Environ(), env...)
		b, err := cmd.CombinedOutput()
		out = string(b)
		if err == nil {
			break
		}
		require.Less(t, try, 10, "setup-namespace.sh keeps failing:\n%s", b)
		require.Contains(t, out, "is not serving yet", "the only failure a starting server may cause")
		time.Sleep(time.Second)
	}
	require.Contains(t, out, "namespace "+ns+" and the OrderId search attribute are ready")
	out = runScript(t, "temporal/setup-namespace.sh", env)
	require.Contains(t, out, "are ready")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := srv.Client().WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	require.NoError(t, err)
	require.Equal(t, 168*time.Hour, d.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration())
	sa, err := exec.Command(cli, "operator", "search-attribute", "list", "--address", srv.Address(), "--namespace", ns).CombinedOutput()
	require.NoError(t, err, "%s", sa)
	require.Regexp(t, `OrderId\s+Keyword`, string(sa))

	// No server: the job fails, for compose to retry.
	cmd := exec.Command("sh", "temporal/setup-namespace.sh")
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "TEMPORAL_ADDRESS=127.0.0.1:1", "NAMESPACE="+ns)
	b, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", b)
}
