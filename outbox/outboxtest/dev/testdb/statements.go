package testdb

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/namedsql"
)

// CheckStatements is the test of a package's SQL: every statement of loaded
// is bound once (listed in bound, see [namedsql.Unbound]), and a freshly
// migrated database describes each bound statement with the columns its row
// type reads ([namedsql.CheckColumns]; prepared, not run).
func CheckStatements(t *testing.T, loaded namedsql.Queries, bound ...namedsql.Info) {
	t.Helper()
	pool, _ := New(t)
	CheckStatementsOn(t, pool, loaded, bound...)
}

// CheckStatementsOn is [CheckStatements] on the database of pool, for
// statements that read tables a migrated database lacks (the caller creates
// them first).
func CheckStatementsOn(t *testing.T, pool *pgxpool.Pool, loaded namedsql.Queries, bound ...namedsql.Info) {
	t.Helper()
	if bad := namedsql.Unbound(loaded, bound...); len(bad) > 0 {
		t.Fatalf("testdb: the package's statements and its bindings disagree: %v", bad)
	}
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer conn.Release()
	if err := namedsql.CheckColumns(t.Context(), conn.Conn(), bound...); err != nil {
		t.Fatal(err)
	}
}
