package orders

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/checkout"
)

// Each table has one owner, the only package whose SQL touches it that way:
//
//   - the orders table is written (INSERT, UPDATE, DELETE, TRUNCATE, MERGE)
//     only by package orders, the order service's commands and the
//     projection's steps (ApplyStepTx); the workflows' activities go through
//     orders.ApplyStep;
//   - outbox_events is read or written only by package outbox (and its
//     subpackages); other packages use its functions (outbox.Enqueue,
//     outbox.EventSequence, outbox.AggregateEvents, ...).
//
// migrations/ may do anything (schema changes and their backfills). The
// test-only and benchmark trees are exempt on purpose: testsuite/ reads
// outbox_events to verify the invariants end to end and ages orders and
// events to reach the time edges; cmd/bench seeds and counts outbox rows to
// measure the relay without the order service, and bench/peers counts the
// rows outflow has not yet published, as it counts the peers' own.
var ownershipRules = []ownershipRule{
	{
		what:    "writes the orders table",
		match:   regexp.MustCompile(`(?i)\b(?:INSERT\s+INTO|UPDATE(?:\s+ONLY)?|DELETE\s+FROM(?:\s+ONLY)?|TRUNCATE(?:\s+TABLE)?(?:\s+ONLY)?|MERGE\s+INTO)\s+` + table("orders")),
		allowed: []string{"orders/", "migrations/", "testsuite/"},
		owner:   "package orders (its .sql files)",
	},
	{
		what:    "uses outbox_events",
		match:   regexp.MustCompile(`(?i)\b(?:FROM|JOIN|UPDATE(?:\s+ONLY)?|INTO|USING|TRUNCATE(?:\s+TABLE)?(?:\s+ONLY)?)\s+` + table("outbox_events")),
		allowed: []string{"outbox/", "migrations/", "testsuite/", "cmd/bench/", "bench/peers/"},
		owner:   "package outbox (use its functions, e.g. outbox.EventSequence, outbox.AggregateEvents)",
	},
}

type ownershipRule struct {
	what    string
	match   *regexp.Regexp
	allowed []string // directories, relative to the repository root, with a trailing slash
	owner   string
}

// table matches the table name, optionally schema-qualified or quoted, as a
// whole word.
func table(name string) string {
	return `(?:"?public"?\.)?(?:"` + name + `"|` + name + `\b)`
}

// TestTableOwnership scans the repository's non-test .go and .sql files and
// fails on any SQL outside a table's owner that uses the table the way
// ownershipRules forbid. Only SQL counts: the string literals of .go files
// and the .sql files, both without their SQL comments, so prose (Go and SQL
// comments) may name the tables freely.
func TestTableOwnership(t *testing.T) {
	t.Parallel()
	root, err := checkout.Root()
	require.NoError(t, err)
	scanned := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || rel == "bin" || d.Name() == "vendor" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, "_test.go") || !(strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, ".sql")) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		for _, v := range ownershipViolations(rel, src) {
			t.Errorf("%s", v)
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, scanned, 50, "the walk from %s found the repository's files", root)
}

// ownershipViolations are the rules file rel (a path relative to the
// repository root, with slashes) breaks, one message each.
func ownershipViolations(rel string, src []byte) []string {
	var sqlTexts []string
	if strings.HasSuffix(rel, ".go") {
		sqlTexts = goStringLiterals(src)
	} else {
		sqlTexts = []string{string(src)}
	}
	var out []string
	for _, r := range ownershipRules {
		if allowedIn(rel, r.allowed) {
			continue
		}
		for _, text := range sqlTexts {
			if m := r.match.FindString(stripSQLComments(text)); m != "" {
				out = append(out, rel+": "+r.what+" ("+strconv.Quote(m)+"); only "+r.owner+" may")
			}
		}
	}
	return out
}

func allowedIn(rel string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(rel, d) {
			return true
		}
	}
	return false
}

// goStringLiterals are the values of a Go file's string literals, where its
// SQL is: comments are not tokens.
func goStringLiterals(src []byte) []string {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	var out []string
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.STRING {
			if v, err := strconv.Unquote(lit); err == nil {
				out = append(out, v)
			}
		}
	}
}

var sqlComments = regexp.MustCompile(`(?s)--[^\n]*|/\*.*?\*/`)

// stripSQLComments drops -- and /* */ comments. It does not parse string
// literals: a "--" inside one cuts the rest of its line, which can only hide
// SQL of that same line.
func stripSQLComments(sql string) string { return sqlComments.ReplaceAllString(sql, " ") }

// TestOwnershipRulesMatchSQLNotProse: the rules catch the statements they
// forbid, wherever they are, and not the prose that names the tables.
func TestOwnershipRulesMatchSQLNotProse(t *testing.T) {
	t.Parallel()
	violating := map[string]string{
		"activities/x.sql":   "-- name: X\nUPDATE orders SET status = 'paid' WHERE id = $1;",
		"activities/y.sql":   "insert into public.orders (id) values ($1)",
		"workflows/x.go":     "package w\nconst q = `\n  DELETE FROM \"orders\"\n  WHERE id = $1`\n",
		"cmd/outboxctl/x.go": "package main\nvar q = \"SELECT e.* FROM orders o JOIN outbox_events e ON true\"\n",
		"orders/x.sql":       "SELECT aggregate_sequence FROM outbox_events WHERE event_id = $1;",
		"internal/x.go":      "package x\nvar q = \"update outbox_events set published_at = now()\"\n",
	}
	for rel, src := range violating {
		require.NotEmpty(t, ownershipViolations(rel, []byte(src)), rel)
	}
	fine := map[string]string{
		// The owners, and the exempt trees.
		"orders/x.sql":            "UPDATE orders SET status = @status WHERE id = @id;",
		"outbox/x.sql":            "DELETE FROM outbox_events WHERE published_at < $1;",
		"outbox/temporalpub/x.go": "package t\nvar q = \"SELECT 1 FROM outbox_events\"\n",
		"migrations/9_x.sql":      "UPDATE orders o SET created_sequence = e.aggregate_sequence FROM outbox_events e;",
		"testsuite/x.sql":         "UPDATE orders SET created_at = now(); SELECT count(*) FROM outbox_events;",
		"cmd/bench/x.sql":         "INSERT INTO outbox_events (event_id) VALUES ($1);",
		// Prose: comments, and names that only start like the tables.
		"activities/x.go": "package a\n// UPDATE orders through orders.ApplyStep; nothing reads from outbox_events here.\n" +
			"/* DELETE FROM orders */\nvar q = \"SELECT orders_settled_through(1, '{}') FROM orders_archive\"\n",
		"activities/x.sql": "-- None reads outbox_events: the projection never does UPDATE orders itself.\n" +
			"SELECT 1 FROM processed_events; /* JOIN outbox_events */",
		"workflows/x.go": "package w\nvar msg = \"the order's events, once written into the outbox\"\n",
	}
	for rel, src := range fine {
		require.Empty(t, ownershipViolations(rel, []byte(src)), rel)
	}
}
