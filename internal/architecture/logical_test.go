package architecture

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
)

// TestLogicalServersAreStopped: testdb.Logical starts a private
// wal_level=logical PostgreSQL for the test process on first use, and only
// the package's TestMain can stop it (testdb.StopLogical) once every test
// has run. A package whose tests call it without stopping it left a
// running server behind after every `go test` (outbox/outboxops and
// outbox/ctl did: two postgres processes more after each CI run).
func TestLogicalServersAreStopped(t *testing.T) {
	t.Parallel()
	root, err := checkout.Root()
	require.NoError(t, err)
	require.Empty(t, unstoppedLogical(t, root), "these packages' tests start testdb.Logical's server and never stop it: "+
		"call testdb.StopLogical() in their TestMain after m.Run")
}

// unstoppedLogical lists the directories under root whose _test.go files
// call testdb.Logical or testdb.NewLogical and none testdb.StopLogical.
func unstoppedLogical(t *testing.T, root string) []string {
	t.Helper()
	starts, stops := map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		src := string(b)
		if strings.Contains(src, "testdb.Logical(") || strings.Contains(src, "testdb.NewLogical(") {
			starts[dir] = true
		}
		if strings.Contains(src, "testdb.StopLogical()") {
			stops[dir] = true
		}
		return nil
	})
	require.NoError(t, err)
	var missing []string
	for dir := range starts {
		if !stops[dir] {
			missing = append(missing, dir)
		}
	}
	return missing
}

// TestLogicalRuleCanFail: a package that starts the server and does not
// stop it is found.
func TestLogicalRuleCanFail(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "pkg"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "pkg", "a_test.go"),
		[]byte("package pkg\nfunc TestA(t *testing.T) { _ = testdb.NewLogical(t) }\n"), 0o644))
	require.Equal(t, []string{"pkg"}, unstoppedLogical(t, root))
	require.NoError(t, os.WriteFile(filepath.Join(root, "pkg", "main_test.go"),
		[]byte("package pkg\nfunc TestMain(m *testing.M) { code := m.Run(); testdb.StopLogical(); os.Exit(code) }\n"), 0o644))
	require.Empty(t, unstoppedLogical(t, root))
}
