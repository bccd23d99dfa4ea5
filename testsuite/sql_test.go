package testsuite

import (
	"testing"

	"github.com/outflow/outflow/internal/dev/testdb"
)

// TestStatements: every statement of invariants.sql and oracle.sql (and the
// time-edge tests' time_edges.sql) is bound and reads the columns the
// database describes.
func TestStatements(t *testing.T) {
	t.Parallel()
	t.Run("suite", func(t *testing.T) {
		t.Parallel()
		testdb.CheckStatements(t, queries, statements...)
	})
	t.Run("time edges", func(t *testing.T) {
		t.Parallel()
		testdb.CheckStatements(t, edgeQueries, edgeStatements...)
	})
}
