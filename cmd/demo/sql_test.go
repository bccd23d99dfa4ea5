package main

import (
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestStatements: every statement of database.sql is bound in sql.go and
// reads the columns the database describes.
func TestStatements(t *testing.T) {
	t.Parallel()
	testdb.CheckStatements(t, queries, statements...)
}
