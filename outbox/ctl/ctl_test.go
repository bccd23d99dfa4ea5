package ctl

import (
	"bytes"
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestStatements: every statement of the package's .sql files is bound in
// sql.go and reads what a migrated database describes.
func TestStatements(t *testing.T) {
	t.Parallel()
	testdb.CheckStatements(t, queries, statements...)
}

// runLibrary runs the library's outboxctl as its main does, on url, with
// getenv the only environment.
func runLibrary(t *testing.T, url string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	app := &App{Commands: Commands()}
	if url != "" {
		args = append(args, "--database-url", url)
	}
	code := app.Run(ctx, args, Process{
		Stdout: &out, Stderr: &errb, Stdin: strings.NewReader(""),
		Getenv: func(name string) string { return env[name] }, Hostname: "host",
	})
	return code, out.String(), errb.String()
}

// TestOutboxOnlyDatabase: on an empty database the library's outboxctl
// refuses status until migrate has brought the outbox's schema, then
// reports on it; nothing of the order app is needed or created.
func TestOutboxOnlyDatabase(t *testing.T) {
	t.Parallel()
	url := testdb.NewEmptyURL(t)

	code, _, errb := runLibrary(t, url, nil, "status")
	require.Equal(t, 1, code, errb)
	require.Contains(t, errb, "outboxctl migrate")

	code, out, errb := runLibrary(t, url, nil, "migrate")
	require.Equal(t, 0, code, errb)
	require.Contains(t, out, "outflow_schema_version")

	code, out, errb = runLibrary(t, url, nil, "status", "--json")
	require.Equal(t, 0, code, errb)
	require.Contains(t, out, "pending")

	pool := testdb.Open(t, url)
	var orders *string
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT to_regclass('orders')::text").Scan(&orders))
	require.Nil(t, orders, "the library's migrate created the order app's table")
}

// TestSettingsComeFromProcess: the library reads its settings through
// Process.Getenv alone: a malformed log level there is a usage error.
func TestSettingsComeFromProcess(t *testing.T) {
	t.Parallel()
	code, _, errb := runLibrary(t, "", map[string]string{LogLevelVar: "loud"}, "status")
	require.Equal(t, 2, code)
	require.Contains(t, errb, "OUTFLOW_LOG_LEVEL=\"loud\"")
}

// TestVersion: the module version a `go install ...@v0.1.0` stamps is
// printed; a build from a checkout, or of another main module, says
// ReleaseVersion.
func TestVersion(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: ModulePath, Version: "v0.2.3"}}
	require.Equal(t, "outboxctl "+ModulePath+" v0.2.3\nrevision unknown (built without VCS stamping: go run, go test, or go build -buildvcs=false)\ngo go1.26.0\n", versionOf("outboxctl", bi))
	bi.Main.Version = unversioned
	bi.Settings = []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}
	require.Equal(t, "outboxctl "+ModulePath+" "+ReleaseVersion+"\nrevision abc modified\ngo go1.26.0\n", versionOf("outboxctl", bi))
}

// TestReadsNoEnvironment: no file of the package reads the process's
// environment; main hands it in (Process.Getenv).
func TestReadsNoEnvironment(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		file, err := parser.ParseFile(token.NewFileSet(), f, src, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" {
					switch sel.Sel.Name {
					case "Getenv", "LookupEnv", "Environ", "ExpandEnv", "Hostname", "Args":
						t.Errorf("%s reads the process's environment (os.%s): take it from Process", f, sel.Sel.Name)
					}
				}
			}
			return true
		})
	}
}
