package outboxops_test

import (
	"testing"

	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestStatements: every statement of operations.sql is bound once in
// sql.go, so none is reached by a name string and none is left over when
// its caller goes, and the database describes each (prepared, not run) with
// the columns its row struct reads: what sqlc checks when it generates code.
// The placeholders were checked against the argument structs when the
// package was initialised.
func TestStatements(t *testing.T) {
	t.Parallel()
	testdb.CheckStatements(t, outboxops.QueriesForTest(), outboxops.StatementsForTest()...)
}
