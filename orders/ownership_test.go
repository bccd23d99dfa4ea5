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

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
)

// Each table has one owner, the only package whose SQL touches it that way:
//
//   - the orders table is written (INSERT, UPDATE, DELETE, TRUNCATE, MERGE)
//     only by package orders, the order service's commands and the
//     projection's steps (ApplyStepTx); the workflows' activities go through
//     orders.ApplyStep;
//   - outbox_events is read or written only by package outbox (and its
//     subpackages, outbox/outboxtest for tests, and outbox/internal/relaysql, which
//     holds the relay's statements for outbox and the benchmarks to bind);
//     other packages use its
//     functions (outbox.Enqueue, outbox.EventSequence,
//     outbox.AggregateEvents, ...), and their tests outboxtest's;
//   - the log source's tables (outbox_log and its partitions,
//     outbox_log_cursors, outbox_log_holds, outbox_log_skips) are read or
//     written only by package outbox, whose LogRelay and hold commands keep
//     the protocol of model/log.pml (every change of a partition's holds
//     locks its cursor row first); other packages use its functions
//     (outbox.Enqueuer, outboxops.LogHolds, outboxops.RetryLogHold, ...);
//   - processed_events, the inbox, is written only by package inbox
//     (Inbox.Record); it is read only there and by package outbox/outboxops,
//     whose retention cleanup deletes old rows of events no longer retained
//     (package outbox itself, the producer and the relays, never touches
//     it);
//   - the operator's own tables (outbox_bulk_retries, the audit of bulk
//     retries; outbox_cleanup_horizon and outbox_replay_horizon, which bound
//     a replay) are written only by package outbox/outboxops, whose
//     commands keep them;
//   - outbox_sink_breakers, the relays' open breakers, is written only by
//     package outbox (the breaker); outboxops reads it for the status.
//
// migrations/ may do anything (schema changes and their backfills). Test
// files are covered like the rest; those that touch a table outside its
// owner on purpose are listed in testExceptions, each with its reason. The
// test-only and benchmark trees' own SQL (their non-test .go and .sql
// files) is exempt: testsuite/ reads outbox_events to verify the invariants
// end to end, reads a consumer's inbox (processed_events) beside them to
// verify the invariants at the stream's consumer, and ages orders and events
// to reach the time edges; cmd/bench
// seeds and counts outbox rows to measure the relay without the order
// service, and bench/peers counts the rows outflow has not yet published, as
// it counts the peers' own.
var ownershipRules = []ownershipRule{
	{
		what:   "writes the orders table",
		match:  regexp.MustCompile(`(?i)\b(?:INSERT\s+INTO|UPDATE(?:\s+ONLY)?|DELETE\s+FROM(?:\s+ONLY)?|TRUNCATE(?:\s+TABLE)?(?:\s+ONLY)?|MERGE\s+INTO)\s+` + table("orders")),
		owners: []string{"orders/", "migrations/"},
		exempt: []string{"testsuite/"},
		owner:  "package orders (its .sql files)",
	},
	{
		what:   "uses outbox_events",
		match:  regexp.MustCompile(`(?i)\b(?:FROM|JOIN|UPDATE(?:\s+ONLY)?|INTO|USING|TRUNCATE(?:\s+TABLE)?(?:\s+ONLY)?)\s+` + table("outbox_events")),
		owners: []string{"outbox/", "outbox/internal/relaysql/", "migrations/"},
		exempt: []string{"testsuite/", "cmd/bench/", "bench/peers/"},
		owner:  "package outbox (use its functions, e.g. outbox.EventSequence, outbox.AggregateEvents; in tests, outbox/outboxtest)",
	},
	{
		what:   "uses the log source's tables",
		match:  regexp.MustCompile(`(?i)\b(?:FROM|JOIN|UPDATE(?:\s+ONLY)?|INTO|USING|TRUNCATE(?:\s+TABLE)?(?:\s+ONLY)?)\s+` + table(`outbox_log(?:_\w+)?`)),
		owners: []string{"outbox/", "migrations/"},
		exempt: []string{"testsuite/", "cmd/bench/", "bench/peers/"},
		owner:  "package outbox (outbox.Enqueuer with EnqueueConfig.Log, outbox.Relay, outboxops.LogHolds, outboxops.RetryLogHold, outboxops.SkipLogHold)",
	},
	{
		what:   "records into processed_events",
		match:  regexp.MustCompile(`(?i)\b(?:INSERT\s+INTO|UPDATE(?:\s+ONLY)?|TRUNCATE(?:\s+TABLE)?(?:\s+ONLY)?|MERGE\s+INTO)\s+` + table("processed_events")),
		owners: []string{"outbox/inbox/", "migrations/"},
		owner:  "package inbox (inbox.Inbox.Record)",
	},
	{
		what:   "uses processed_events",
		match:  regexp.MustCompile(`(?i)\b(?:FROM|JOIN|UPDATE(?:\s+ONLY)?|INTO|USING|TRUNCATE(?:\s+TABLE)?(?:\s+ONLY)?)\s+` + table("processed_events")),
		owners: []string{"outbox/inbox/", "outbox/outboxops/", "outbox/migrations/", "migrations/"},
		exempt: []string{"testsuite/"},
		owner:  "package inbox (inbox.Inbox.Record, inbox.Inbox.Seen) and outboxops's retention cleanup (outboxops.Cleanup)",
	},
	{
		what:   "writes outbox_sink_breakers",
		match:  regexp.MustCompile(`(?i)\b(?:INSERT\s+INTO|UPDATE(?:\s+ONLY)?|DELETE\s+FROM(?:\s+ONLY)?|TRUNCATE(?:\s+TABLE)?(?:\s+ONLY)?|MERGE\s+INTO)\s+` + table("outbox_sink_breakers")),
		owners: []string{"outbox/", "outbox/migrations/", "migrations/"},
		owner:  "package outbox (the relay's breaker, breaker.sql)",
	},
	{
		what: "writes the operator's tables",
		match: regexp.MustCompile(`(?i)\b(?:INSERT\s+INTO|UPDATE(?:\s+ONLY)?|DELETE\s+FROM(?:\s+ONLY)?|TRUNCATE(?:\s+TABLE)?(?:\s+ONLY)?|MERGE\s+INTO)\s+` +
			`(?:` + table("outbox_bulk_retries") + `|` + table("outbox_cleanup_horizon") + `|` + table("outbox_replay_horizon") + `)`),
		owners: []string{"outbox/outboxops/", "outbox/migrations/", "migrations/"},
		owner:  "package outbox/outboxops (outboxops.RetryQuarantined, outboxops.Cleanup, outboxops.RecordReplayHorizon)",
	},
}

type ownershipRule struct {
	what  string
	match *regexp.Regexp
	// owners are directories (relative to the repository root, with a
	// trailing slash) whose files, tests included, may.
	owners []string
	// exempt are directories whose non-test files may: trees of tooling
	// around the product, not its packages.
	exempt []string
	owner  string
}

// testExceptions are the test files that use a table outside its owner on
// purpose, by file and the rule's what ("*": every rule), each with why no
// owner's helper serves.
var testExceptions = []struct{ file, rule, why string }{
	{"orders/ownership_test.go", "*",
		"its examples are the statements the rules forbid"},
	{"orders/migration_test.go", "uses outbox_events",
		"seeds outbox rows at schema version 6, before the columns outboxtest reads exist, to test migration 7's backfill"},
	{"testsuite/console_test.go", "uses outbox_events",
		"snapshots the two events' whole rows (and the bulk retries' audit) to show that a refused action changed nothing at all, where outboxtest reads chosen columns"},
	{"testsuite/codec_cost_test.go", "uses outbox_events",
		"a cost measurement (a benchmark, not in make test): it polls a cheap count while the relay drains and reads min/max(published_at), where reading every row would load the database it measures"},
	{"activities/project_order_test.go", "writes the orders table",
		"inserts the order row (and a cancel's columns) its projection steps apply to, without the order service"},
	{"activities/project_order_test.go", "uses processed_events",
		"counts every inbox row of a consumer, whatever the event, which the inbox's key lookup cannot"},
	{"activities/email_test.go", "uses processed_events",
		"deletes the inbox rows to show that the inbox, not the provider's key, kept the email single"},
	{"activities/send_email_test.go", "uses processed_events",
		"deletes the email's inbox row: the state of a crash between the send and the row"},
	{"outbox/ctl/cleanup_test.go", "records into processed_events",
		"seeds inbox rows processed days ago for cleanup to delete or keep"},
	{"outbox/ctl/cleanup_test.go", "uses processed_events",
		"seeds inbox rows processed days ago, and counts what cleanup left"},
	{"outbox/outboxops/cleanup_test.go", "records into processed_events",
		"seeds inbox rows processed days ago for outboxops.Cleanup to delete or keep"},
	{"cmd/outboxctl/forget_test.go", "writes the orders table",
		"settles the order by hand, as its saga would have"},
	{"cmd/outboxctl/skip_test.go", "writes the orders table",
		"inserts order rows and moves one's projection, for skip to settle"},
	{"workflows/devserver_test.go", "writes the orders table",
		"inserts the order rows its workflows run for, without the order service"},
	{"outbox/outboxtest/dev/testdb/testdb_test.go", "records into processed_events",
		"writes a row into one test database to prove another does not see it"},
	{"outbox/outboxtest/dev/testdb/testdb_test.go", "uses processed_events",
		"counts that row in both databases"},
	{"cmd/inventory/helpers_test.go", "uses processed_events",
		"counts every inbox row of the inventory's consumer, to show a refused request wrote none, which the inbox's key lookup cannot"},
	{"cmd/inventory/process_test.go", "records into processed_events",
		"ages the inventory's inbox rows ten days, for the binary's retention schedule to delete them"},
	{"cmd/inventory/process_test.go", "uses processed_events",
		"ages the inventory's inbox rows ten days, for the binary's retention schedule to delete them"},
}

// table matches the table name, optionally schema-qualified or quoted, as a
// whole word.
func table(name string) string {
	return `(?:"?public"?\.)?(?:"` + name + `"|` + name + `\b)`
}

// TestTableOwnership scans the repository's .go files, tests included, and
// .sql files and fails on any SQL outside a table's owner that uses the
// table the way ownershipRules forbid. Only SQL counts: the string literals
// of .go files and the .sql files, both without their SQL comments, so prose
// (Go and SQL comments) may name the tables freely.
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
		if !(strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, ".sql")) {
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
	for _, e := range testExceptions {
		src, err := os.ReadFile(filepath.Join(root, e.file))
		require.NoError(t, err, "testExceptions lists %s, which is gone: remove its entry", e.file)
		require.True(t, breaks(e.file, src, e.rule), "%s no longer %s: remove its entry from testExceptions", e.file, e.rule)
	}
}

// breaks reports whether file rel's SQL does what the rule called what
// forbids ("*": any rule), exceptions aside.
func breaks(rel string, src []byte, what string) bool {
	for _, r := range ownershipRules {
		if (what != "*" && r.what != what) || inDirs(rel, r.owners) {
			continue
		}
		for _, text := range sqlTexts(rel, src) {
			if r.match.MatchString(stripSQLComments(text)) {
				return true
			}
		}
	}
	return false
}

// ownershipViolations are the rules file rel (a path relative to the
// repository root, with slashes) breaks, one message each.
func ownershipViolations(rel string, src []byte) []string {
	var out []string
	for _, r := range ownershipRules {
		if r.allows(rel) {
			continue
		}
		for _, text := range sqlTexts(rel, src) {
			if m := r.match.FindString(stripSQLComments(text)); m != "" {
				out = append(out, rel+": "+r.what+" ("+strconv.Quote(m)+"); only "+r.owner+" may")
			}
		}
	}
	return out
}

// allows reports whether file rel may use the table the way r forbids: it
// is in an owner's directory, a non-test file of an exempt tree, or a test
// file testExceptions lists for r.
func (r ownershipRule) allows(rel string) bool {
	if inDirs(rel, r.owners) {
		return true
	}
	if !strings.HasSuffix(rel, "_test.go") {
		return inDirs(rel, r.exempt)
	}
	for _, e := range testExceptions {
		if e.file == rel && (e.rule == "*" || e.rule == r.what) {
			return true
		}
	}
	return false
}

func inDirs(rel string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(rel, d) {
			return true
		}
	}
	return false
}

// sqlTexts are where file rel's SQL is: a .go file's string literals, a
// .sql file's whole text.
func sqlTexts(rel string, src []byte) []string {
	if strings.HasSuffix(rel, ".go") {
		return goStringLiterals(src)
	}
	return []string{string(src)}
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
		"activities/z.sql":   "INSERT INTO processed_events (consumer_name, event_id) VALUES (@consumer, @event_id);",
		"starter/y.go":       "package main\nvar q = \"UPDATE outbox_log_cursors SET epoch = epoch + 1\"\n",
		"orders/z.sql":       "SELECT count(*) FROM public.outbox_log WHERE partition = @p;",
		"orders/y.sql":       "SELECT EXISTS (SELECT 1 FROM processed_events WHERE event_id = @event_id);",
		"outbox/y.sql":       "INSERT INTO processed_events (consumer_name, event_id) VALUES ($1, $2);",
		// The relays' package reads no inbox row, nor keeps the operator's tables.
		"outbox/z.sql":            "DELETE FROM processed_events WHERE processed_at < $1;",
		"outbox/w.sql":            "INSERT INTO outbox_replay_horizon (horizon_ms, reason) VALUES ($1, $2);",
		"outbox/temporalpub/x.go": "package t\nvar q = \"UPDATE public.outbox_cleanup_horizon SET deleted_before = now()\"\n",
		"cmd/outboxctl/y_test.go": "package main\nvar q = `DELETE FROM outbox_bulk_retries`\n",
		"starter/x.go":            "package main\nvar q = \"update \\\"outbox_replay_horizon\\\" set reason = 'x'\"\n",
		// Test files are covered: an owner's helper, or a listed exception.
		"activities/x_test.go":     "package a\nvar q = `SELECT count(*) FROM outbox_events WHERE aggregate_id = $1`\n",
		"testsuite/x_test.go":      "package t\nvar q = \"UPDATE outbox_events SET published_at = now()\"\n",
		"orders/migration_test.go": "package orders\nvar q = \"DELETE FROM processed_events\"\n",
	}
	for rel, src := range violating {
		require.NotEmpty(t, ownershipViolations(rel, []byte(src)), rel)
	}
	fine := map[string]string{
		// The owners, and the exempt trees.
		"orders/x.sql":            "UPDATE orders SET status = @status WHERE id = @id;",
		"outbox/x.sql":            "DELETE FROM outbox_events WHERE published_at < $1;",
		"outbox/log.sql":          "UPDATE outbox_log_cursors SET tries = 0; SELECT 1 FROM outbox_log;",
		"outbox/temporalpub/x.go": "package t\nvar q = \"SELECT 1 FROM outbox_events\"\n",
		"migrations/9_x.sql":      "UPDATE orders o SET created_sequence = e.aggregate_sequence FROM outbox_events e;",
		"testsuite/x.sql":         "UPDATE orders SET created_at = now(); SELECT count(*) FROM outbox_events;",
		"cmd/bench/x.sql":         "INSERT INTO outbox_events (event_id) VALUES ($1);",
		// Prose: comments, and names that only start like the tables.
		"activities/x.go": "package a\n// UPDATE orders through orders.ApplyStep; nothing reads from outbox_events here.\n" +
			"/* DELETE FROM orders */\nvar q = \"SELECT orders_settled_through(1, '{}') FROM orders_archive\"\n",
		"activities/x.sql": "-- None reads outbox_events: the projection never does UPDATE orders itself.\n" +
			"SELECT 1 FROM processed_events_archive; /* JOIN outbox_events, INSERT INTO processed_events */",
		"outbox/inbox/x.sql":       "INSERT INTO processed_events (consumer_name, event_id) VALUES (@c, @e) ON CONFLICT DO NOTHING;",
		"outbox/outboxops/y.sql":   "DELETE FROM processed_events WHERE (consumer_name, event_id) IN (SELECT consumer_name, event_id FROM processed_events p);",
		"outbox/outboxops/z.sql":   "INSERT INTO outbox_cleanup_horizon AS h (singleton, deleted_before) VALUES (true, $1);",
		"cmd/outboxctl/x_test.go":  "package main\nvar q = `SELECT count(*) FROM outbox_bulk_retries`\n",
		"outbox/outboxtest/x.sql":  "UPDATE outbox_events SET published_at = now() WHERE event_id = ANY(@event_ids);",
		"orders/migration_test.go": "package orders\nvar q = \"INSERT INTO outbox_events (event_id) VALUES ($1)\"\n",
		"testsuite/oracle.sql":     "SELECT count(*) FROM outbox_events;",
		"workflows/x.go":           "package w\nvar msg = \"the order's events, once written into the outbox\"\n",
	}
	for rel, src := range fine {
		require.Empty(t, ownershipViolations(rel, []byte(src)), rel)
	}
}
