package codec_test

import (
	"testing"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestStatements: every statement of the package's .sql files is bound once
// in store.go, so none is reached by a name string, and the database
// describes each with the columns its row type reads.
func TestStatements(t *testing.T) {
	t.Parallel()
	testdb.CheckStatements(t, codec.QueriesForTest(), codec.StatementsForTest()...)
}
