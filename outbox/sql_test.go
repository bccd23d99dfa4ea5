package outbox_test

import (
	"testing"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestStatements: every statement of the package's .sql files and of the
// relay's (outbox/internal/relaysql) is bound once in sql.go, so none is reached by
// a name string and none is left over when its caller goes, and the database
// describes each (prepared, not run) with the columns its row struct reads.
// The placeholders were checked against the argument structs when the
// package was initialised.
func TestStatements(t *testing.T) {
	t.Parallel()
	testdb.CheckStatements(t, outbox.QueriesForTest(), outbox.StatementsForTest()...)
}
