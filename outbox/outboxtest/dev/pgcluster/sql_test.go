package pgcluster_test

import (
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/pgcluster"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestStatements: every statement of pgcluster.sql is bound in sql.go and
// reads the columns the database describes.
func TestStatements(t *testing.T) {
	t.Parallel()
	testdb.CheckStatements(t, pgcluster.QueriesForTest(), pgcluster.StatementsForTest()...)
}
