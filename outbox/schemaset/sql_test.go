package schemaset_test

import (
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/schemaset"
)

// TestStatements: every statement of schemaset.sql is bound in sql.go and
// reads the columns the database describes.
func TestStatements(t *testing.T) {
	t.Parallel()
	testdb.CheckStatements(t, schemaset.QueriesForTest(), schemaset.StatementsForTest()...)
}
