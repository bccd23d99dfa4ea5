package testsuite

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestStatements: every statement of invariants.sql, inventory.sql,
// oracle.sql and useddb.sql (and the time-edge tests' time_edges.sql) is
// bound and reads the columns the database describes.
func TestStatements(t *testing.T) {
	t.Parallel()
	t.Run("suite", func(t *testing.T) {
		t.Parallel()
		// FeedFacts reads the JetStream consumer's table, which cmd/orderfeed
		// creates at start (it has no migrations): create it from the
		// example's own statement first.
		pool, _ := testdb.New(t)
		feed, err := namedsql.Load(os.DirFS("../cmd/orderfeed"), "feed.sql")
		require.NoError(t, err)
		_, err = pool.Exec(t.Context(), feed.Get("FeedSchema"))
		require.NoError(t, err)
		// inventory.sql reads the inventory service's tables (cmd/inventory
		// migrates its own database): create them beside the outbox from its
		// migration's Up part.
		up, err := os.ReadFile("../cmd/inventory/migrations/00001_inventory.sql")
		require.NoError(t, err)
		schema, _, found := strings.Cut(string(up), "-- +goose Down")
		require.True(t, found, "the inventory's migration has a Down part")
		_, err = pool.Exec(t.Context(), schema)
		require.NoError(t, err)
		testdb.CheckStatementsOn(t, pool, queries, append(statements, inventoryStatements...)...)
	})
	t.Run("time edges", func(t *testing.T) {
		t.Parallel()
		testdb.CheckStatements(t, edgeQueries, edgeStatements...)
	})
	t.Run("console bench", func(t *testing.T) {
		t.Parallel()
		testdb.CheckStatements(t, benchQueries, benchStatements...)
	})
}
