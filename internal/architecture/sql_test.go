package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
)

// inlineSQLPending are the files that still send SQL written as Go strings
// or untyped Queries.Get text where the rule wants a bound statement, listed
// in CONTRIBUTING.md's "Not yet everywhere". It is empty: every file has
// moved, and none joins it (a new inline query fails TestSQLIsBound).
var inlineSQLPending = []string{}

// queryMethods are the pgx and database/sql methods whose first string
// argument is a statement's text.
var queryMethods = []string{"Exec", "Query", "QueryRow", "ExecContext", "QueryContext", "QueryRowContext", "Prepare", "Queue"}

var (
	sqlText = regexp.MustCompile(`(?is)^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|DROP|ALTER|TRUNCATE|VACUUM|ANALYZE|CHECKPOINT|LISTEN|NOTIFY|SET|SHOW)\b`)
	// databaseDDL names a database or a schema (outboxtest.NewSchema's),
	// which no placeholder can stand for.
	databaseDDL = regexp.MustCompile(`(?is)^\s*(CREATE|DROP|ALTER) (DATABASE|SCHEMA)\b`)
	// namedGet is an untyped look-up of a statement by its name.
	namedGet = regexp.MustCompile(`(?i)queries$`)
)

// inlineSQL: where src, a file that is not a test, sends SQL it writes as a
// Go string, or looks a statement up by name (Queries.Get), instead of
// running a bound statement. DDL that names a database or schema is allowed: its name
// can only be quoted into the text.
func inlineSQL(name string, src []byte) []string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return []string{name + ": " + err.Error()}
	}
	var bad []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		at := fset.Position(call.Pos()).String()
		if x, ok := sel.X.(*ast.Ident); ok && sel.Sel.Name == "Get" && namedGet.MatchString(x.Name) {
			bad = append(bad, at+": "+x.Name+".Get: bind the statement with namedsql.Bind")
			return true
		}
		if !slices.Contains(queryMethods, sel.Sel.Name) {
			return true
		}
		for _, arg := range call.Args[:min(2, len(call.Args))] {
			if text, ok := leadingString(arg); ok && sqlText.MatchString(text) && !databaseDDL.MatchString(text) {
				bad = append(bad, at+": SQL written inline: put it in a .sql file and bind it with namedsql.Bind")
			}
		}
		return true
	})
	return bad
}

// leadingString is the string literal an expression starts with: the
// literal itself, the left end of a concatenation, or a format string.
func leadingString(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		}
	case *ast.BinaryExpr:
		return leadingString(e.X)
	case *ast.CallExpr:
		if len(e.Args) > 0 {
			return leadingString(e.Args[0])
		}
	}
	return "", false
}

// TestSQLIsBound: code that is not a test sends only statements of .sql
// files bound with namedsql.Bind. Test files may write an ad-hoc assertion
// query inline; testdata holds example services of their own.
func TestSQLIsBound(t *testing.T) {
	t.Parallel()
	root, err := checkout.Root()
	require.NoError(t, err)
	var bad []string
	var seen []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (d.Name() == "testdata" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || rel == "orders/sql.go" {
			return nil // orders.SQL hands the benches the order insert's text by name
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found := inlineSQL(filepath.ToSlash(rel), src)
		if slices.Contains(inlineSQLPending, filepath.ToSlash(rel)) {
			seen = append(seen, filepath.ToSlash(rel))
			if len(found) == 0 {
				bad = append(bad, rel+" sends no inline SQL any more: take it off inlineSQLPending")
			}
			return nil
		}
		bad = append(bad, found...)
		return nil
	}))
	require.Empty(t, bad, "SQL lives in .sql files bound with namedsql.Bind (CONTRIBUTING.md, \"Where a query goes\")")
	require.ElementsMatch(t, inlineSQLPending, seen, "a file of inlineSQLPending is gone: take it off the list")
}

// TestInlineSQLCanFail feeds the rule a file that breaks it.
func TestInlineSQLCanFail(t *testing.T) {
	t.Parallel()
	src := `package p
func f() {
	db.Exec(ctx, "UPDATE t SET a = 1")
	db.QueryRow(ctx, ` + "`SELECT count(*) FROM t`" + `)
	db.Exec(ctx, fmt.Sprintf("DELETE FROM %s", t))
	tx.ExecContext(ctx, queries.Get("LockSet"), 1)
	db.Exec(ctx, "CREATE DATABASE "+name)
	db.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name))
	q.Exec(ctx, db, args{})
	fmt.Errorf("insert the order: %w", err)
}
`
	got := inlineSQL("p.go", []byte(src))
	require.Len(t, got, 4, "%v", got)
	require.Contains(t, got[3], "queries.Get")
}
