package orders

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/namedsql"
)

// TestEveryStatementIsBound: each statement of the package's .sql files is
// bound to its Go types in sql.go, so none is reached by a name string.
func TestEveryStatementIsBound(t *testing.T) {
	t.Parallel()
	var bound []string
	for _, s := range statements {
		bound = append(bound, s.Name)
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(queries)), bound,
		"bind every statement of the package's .sql files once, with namedsql.Bind in sql.go, and list it in statements")
}

// TestStatementsMatchTheirGoTypes has the database describe every statement
// (prepared, not run): every result column must be a field of the row type
// and every field a column, by name, which is how the rows are read.
func TestStatementsMatchTheirGoTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	conn, err := b.pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	require.NoError(t, namedsql.CheckColumns(t.Context(), conn.Conn(), statements...))
}
