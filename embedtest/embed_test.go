package embedtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/outflow/outflow/outbox/inbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/schemaset"
)

// serviceModule is the module path of testdata/invoices.
const serviceModule = "example.com/invoices"

// The names the service uses, which the checks from outside look for.
const (
	aggregateType  = "invoice"
	eventType      = "InvoiceIssued"
	workflowType   = "InvoiceWorkflow"
	ledgerConsumer = "invoices.ledger"
	invoiceIDAttr  = "InvoiceId"
	orderIDAttr    = "OrderId" // the order app's attribute, which the namespace lacks
)

// TestServiceOutsideTheRepository: the invoices service, a module of its own
// outside this repository, adopts the outbox with the public packages only
// (the check of its imports), on a database it migrates itself (its goose
// migrations beside outbox.Migrate) and a namespace without OrderId, and its
// own tests pass; what they leave is then checked from here.
func TestServiceOutsideTheRepository(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := writeModule(t, false)

	problems := checkDeps(serviceModule, goList(t, ctx, dir))
	require.Empty(t, problems, "the service's build needs more than outflow's public packages:\n%s", strings.Join(problems, "\n"))
	problems = checkModules(goListModules(t, ctx, dir))
	require.Empty(t, problems, "the service's module graph holds what only the order app or the JetStream sink needs:\n%s", strings.Join(problems, "\n"))

	srv := devserver.Start(t, devserver.Options{})
	ns := "billing-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	require.NoError(t, srv.RegisterNamespace(ctx, ns, 24*time.Hour))
	c, err := client.Dial(srv.ClientOptions(ns))
	require.NoError(t, err)
	defer c.Close()
	addKeywordAttribute(t, ctx, c, ns, invoiceIDAttr)
	dbURL := testdb.NewEmptyURL(t)

	env := []string{
		"DATABASE_URL=" + dbURL,
		"TEMPORAL_ADDRESS=" + srv.Address(),
		"TEMPORAL_NAMESPACE=" + ns,
	}
	goRun(t, ctx, dir, env, "vet", "./...")
	goRun(t, ctx, dir, env, "test", "-count=1", "-v", "./...")

	// What the service's tests left, seen from outside.
	pool := testdb.Open(t, dbURL)
	events := outboxtest.Events(t, pool, outboxtest.Match{})
	require.Len(t, events, 1, "TestInvoiceIssued's event: the rolled-back invoice left none, and TestCleanup's aged one was deleted")
	ev := events[0]
	require.Equal(t, aggregateType, ev.AggregateType)
	require.Equal(t, eventType, ev.Type)
	require.NotNil(t, ev.PublishedAt, "the event is marked published")

	ib, err := inbox.New(nil)
	require.NoError(t, err)
	seen, err := ib.Seen(ctx, pool, ledgerConsumer, ev.ID)
	require.NoError(t, err)
	require.True(t, seen, "the ledger's inbox recorded the event")
	var entries int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries WHERE invoice_id = $1`, ev.AggregateID).Scan(&entries))
	require.Equal(t, 1, entries, "one ledger entry although the event was delivered twice")

	requireSchemas(t, ctx, pool)
	requireOneRun(t, ctx, c, ns, ev)
}

// writeModule copies testdata/invoices into a temporary directory outside
// the repository and writes its go.mod: the service's module requiring the
// library's module (outbox/go.mod), replaced by this checkout's, and the
// library's requirements (its go.sum copied), so the build needs only the
// module cache. With withApp it also requires outflow's root module, the
// order app's, as a service that reaches past the library would.
func writeModule(t *testing.T, withApp bool) string {
	t.Helper()
	root, err := checkout.Root()
	require.NoError(t, err)
	dir := t.TempDir()
	src := filepath.Join(root, "embedtest", "testdata", "invoices")
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))

	modules := []string{"outbox"} // the library's module, by directory
	if withApp {
		modules = append(modules, ".")
	}
	var goVersion string
	var requires []string
	var goSum bytes.Buffer
	for _, m := range modules {
		goMod, err := os.ReadFile(filepath.Join(root, m, "go.mod"))
		require.NoError(t, err)
		v, reqs := parseGoMod(t, goMod)
		goVersion = max(goVersion, v)
		requires = append(requires, reqs...)
		sum, err := os.ReadFile(filepath.Join(root, m, "go.sum"))
		require.NoError(t, err)
		goSum.Write(sum)
	}
	// Outflow's own modules are replaced by this checkout's directories.
	replaces := map[string]string{libraryModule: filepath.Join(root, "outbox")}
	if withApp {
		replaces[outflowModule] = root
		replaces[libraryModule+"/natspub"] = filepath.Join(root, "outbox", "natspub")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo %s\n\nrequire (\n", serviceModule, goVersion)
	for _, m := range slices.Sorted(maps.Keys(replaces)) {
		fmt.Fprintf(&b, "\t%s v0.0.0-00010101000000-000000000000\n", m)
	}
	for _, r := range slices.Compact(slices.Sorted(slices.Values(requires))) {
		if path, _, _ := strings.Cut(r, " "); replaces[path] == "" {
			fmt.Fprintf(&b, "\t%s\n", r)
		}
	}
	b.WriteString(")\n\nreplace (\n")
	for _, m := range slices.Sorted(maps.Keys(replaces)) {
		fmt.Fprintf(&b, "\t%s => %s\n", m, replaces[m])
	}
	b.WriteString(")\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(b.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), goSum.Bytes(), 0o644))
	return dir
}

// parseGoMod returns the go directive's version and every requirement
// ("path version", comments dropped) of a go.mod.
func parseGoMod(t *testing.T, goMod []byte) (goVersion string, requires []string) {
	t.Helper()
	inBlock := false
	sc := bufio.NewScanner(bytes.NewReader(goMod))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		f := strings.Fields(line)
		switch {
		case inBlock && len(f) == 1 && f[0] == ")":
			inBlock = false
		case inBlock && len(f) == 2:
			requires = append(requires, f[0]+" "+f[1])
		case len(f) == 2 && f[0] == "go":
			goVersion = f[1]
		case len(f) == 2 && f[0] == "require" && f[1] == "(":
			inBlock = true
		case len(f) == 3 && f[0] == "require":
			requires = append(requires, f[1]+" "+f[2])
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, goVersion, "a go.mod of outflow has no go directive")
	require.NotEmpty(t, requires, "a go.mod of outflow has no requirements")
	return goVersion, requires
}

// goEnv is the environment of the go commands run on the service: this
// process's, outside any workspace, allowed to complete the service's
// go.mod from the module graph (-mod=mod; the module cache has everything
// outflow's own build needs), plus extra.
func goEnv(extra []string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"GOFLAGS", "GOWORK", "DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE"}, name)
	})
	flags := strings.TrimSpace(os.Getenv("GOFLAGS") + " -mod=mod")
	return append(env, append([]string{"GOFLAGS=" + flags, "GOWORK=off"}, extra...)...)
}

// goList is `go list -e -deps -test -json ./...` of the service: every
// package of its build and of its tests' builds.
func goList(t *testing.T, ctx context.Context, dir string) []listedPackage {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", "list", "-e", "-deps", "-test", "-json", "./...")
	cmd.Dir, cmd.Env = dir, goEnv(nil)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list in %s: %s", dir, stderr.String())
	pkgs, err := decodePackages(bytes.NewReader(out))
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(pkgs, func(p listedPackage) bool { return p.ImportPath == serviceModule }),
		"go list did not list %s", serviceModule)
	return pkgs
}

// goListModules is `go list -m all` of the service: every module of its
// graph, by path.
func goListModules(t *testing.T, ctx context.Context, dir string) []string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Path}}", "all")
	cmd.Dir, cmd.Env = dir, goEnv(nil)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list -m all in %s: %s", dir, stderr.String())
	return strings.Fields(string(out))
}

// goRun runs `go args...` in the service's directory and fails t with its
// output if it fails; it logs the output either way.
func goRun(t *testing.T, ctx context.Context, dir string, env []string, args ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = dir, goEnv(env)
	out, err := cmd.CombinedOutput()
	t.Logf("go %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
	require.NoError(t, err, "go %s in the service's module failed", strings.Join(args, " "))
}

// addKeywordAttribute registers a Keyword search attribute on ns, as a team
// does once with `temporal operator search-attribute create`, and waits
// until the namespace lists it.
func addKeywordAttribute(t *testing.T, ctx context.Context, c client.Client, ns, name string) {
	t.Helper()
	_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        ns,
		SearchAttributes: map[string]enumspb.IndexedValueType{name: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		attrs, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
		return err == nil && attrs.GetCustomAttributes()[name] == enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}, 30*time.Second, 50*time.Millisecond)
	attrs, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	require.NoError(t, err)
	require.NotContains(t, attrs.GetCustomAttributes(), orderIDAttr, "the namespace is a team's that never registered the order app's attribute")
}

// requireSchemas: the database holds the service's schema and the outbox's,
// each versioned in its own table, and nothing of the order app.
func requireSchemas(t *testing.T, ctx context.Context, db *pgxpool.Pool) {
	t.Helper()
	versions := func(table string) []int64 {
		rows, err := db.Query(ctx, fmt.Sprintf(`SELECT version_id FROM %s WHERE is_applied AND version_id > 0 ORDER BY version_id`, table))
		require.NoError(t, err)
		v, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		return v
	}
	require.Equal(t, []int64{20240101120000, 20240301120000}, versions("goose_db_version"),
		"goose's default table holds the service's versions and nothing of outflow's")
	outboxSet := schemaset.Lookup("outflow_schema_version")
	require.NotNil(t, outboxSet)
	want, err := outboxSet.Versions()
	require.NoError(t, err)
	require.Equal(t, want, versions("outflow_schema_version"), "the outbox's versions, in its own table")
	for _, table := range []string{"orders", "idempotency_keys", "customer_keys", "customer_key_erasures", "outflow_orders_schema_version"} {
		var exists bool
		require.NoError(t, db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists))
		require.False(t, exists, "the order app's table %s in the service's database", table)
	}
}

// requireOneRun: the event's workflow ran once in ns, completed, and carries
// the route's search attribute and not the order app's.
func requireOneRun(t *testing.T, ctx context.Context, c client.Client, ns string, ev outboxtest.Event) {
	t.Helper()
	var runs []*workflowpb.WorkflowExecutionInfo
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns})
		if err != nil {
			return false
		}
		runs = resp.GetExecutions()
		return len(runs) > 0 && !slices.ContainsFunc(runs, func(r *workflowpb.WorkflowExecutionInfo) bool {
			return r.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
		})
	}, 30*time.Second, 50*time.Millisecond, "the namespace's visibility lists the closed run")
	require.Len(t, runs, 1, "one workflow run for one event, though it was published twice")
	run := runs[0]
	require.Equal(t, ev.ID.String(), run.GetExecution().GetWorkflowId())
	require.Equal(t, workflowType, run.GetType().GetName())
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, run.GetStatus())
	fields := run.GetSearchAttributes().GetIndexedFields()
	require.NotContains(t, fields, orderIDAttr)
	var invoiceID string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(fields[invoiceIDAttr], &invoiceID))
	require.Equal(t, ev.AggregateID, invoiceID)
}
