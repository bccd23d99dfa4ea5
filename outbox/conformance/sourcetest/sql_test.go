package sourcetest

import (
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestStatements: every statement of sourcetest.sql is bound once and
// described by a migrated PostgreSQL.
func TestStatements(t *testing.T) {
	testdb.CheckStatements(t, queries, qEndConnections.Info())
}
