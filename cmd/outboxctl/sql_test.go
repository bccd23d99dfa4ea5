package main

import (
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestStatements: every statement of outboxctl's .sql files is bound in
// sql.go and reads the columns a migrated database (the outbox's and the
// order app's tables) describes.
func TestStatements(t *testing.T) {
	t.Parallel()
	testdb.CheckStatements(t, queries, statements...)
}
