package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
)

// libraryRoots are the directories of outflow's public libraries: what a
// service embeds (docs/embedding.md). A library never reads the
// environment: the binary that runs it parses its variables and hands it
// a config.
var libraryRoots = []string{"outbox", "inbox"}

// devRooms are the library's dev helpers (test servers and databases,
// which read TEST_DATABASE_URL and the tool paths as a test's own code
// does): no service links them (TestArchitecture holds that
// for outflow's binaries).
var devRooms = []string{"outbox/outboxtest/dev", "outbox/natspub/dev"}

// envReaders are the functions that read the process's environment, by
// package.
var envReaders = map[string][]string{
	"os":      {"Getenv", "LookupEnv", "Environ", "ExpandEnv"},
	"syscall": {"Getenv", "Environ"},
}

// envReads: where src, a Go file that is not a test, reads the
// environment (a call of os.Getenv, or the function handed on as a
// value). A main package may: it is a binary.
func envReads(name string, src []byte) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return []string{name + ": " + err.Error()}
	}
	if f.Name.Name == "main" {
		return nil
	}
	// The names the file gives the packages that read the environment.
	local := map[string]string{}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if _, ok := envReaders[path]; !ok {
			continue
		}
		n := path
		if imp.Name != nil {
			n = imp.Name.Name
		}
		local[n] = path
	}
	var bad []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		if path, ok := local[x.Name]; ok && slices.Contains(envReaders[path], sel.Sel.Name) {
			bad = append(bad, fset.Position(sel.Pos()).String()+": "+path+"."+sel.Sel.Name+" reads the environment")
		}
		return true
	})
	return bad
}

// TestLibrariesReadNoEnvironment: no library package under outbox/ or
// inbox/ reads the environment outside its tests; the binaries parse the
// variables (internal/service for outflow's own) and pass configs.
func TestLibrariesReadNoEnvironment(t *testing.T) {
	t.Parallel()
	root, err := checkout.Root()
	require.NoError(t, err)
	var bad []string
	files := 0
	for _, lib := range libraryRoots {
		require.NoError(t, filepath.WalkDir(filepath.Join(root, lib), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				rel, _ := filepath.Rel(root, path)
				if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || slices.Contains(devRooms, filepath.ToSlash(rel)) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files++
			rel, _ := filepath.Rel(root, path)
			bad = append(bad, envReads(filepath.ToSlash(rel), src)...)
			return nil
		}))
	}
	require.Greater(t, files, 20, "the walk found the libraries' files")
	require.Empty(t, bad, "a library reads no environment: take the value as a config field, and parse the variable in the binary "+
		"(internal/service for outflow's own binaries)")
}

// TestEnvRuleCanFail feeds the rule files that break it, and a main
// package, which may read the environment.
func TestEnvRuleCanFail(t *testing.T) {
	t.Parallel()
	src := `package lib
import (
	"os"
	sys "syscall"
)
func f() {
	_ = os.Getenv("OUTFLOW_RETENTION")
	_, _ = os.LookupEnv("X")
	parse(os.Getenv)
	_ = os.Environ()
	_, _ = sys.Getenv("Y")
	_ = os.Args
}
`
	got := envReads("lib.go", []byte(src))
	require.Len(t, got, 5, "%v", got)
	require.Contains(t, got[0], "os.Getenv")
	require.Contains(t, got[4], "syscall.Getenv")
	require.Empty(t, envReads("main.go", []byte(strings.Replace(src, "package lib", "package main", 1))), "a binary may")
}
