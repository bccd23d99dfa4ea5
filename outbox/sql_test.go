package outbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/namedsql"
	"github.com/outflow/outflow/outbox"
)

// TestEveryStatementIsBound: each statement of the package's .sql files is
// bound to its Go types in sql.go, so none is reached by a name string, and
// none is left over when its caller goes.
func TestEveryStatementIsBound(t *testing.T) {
	t.Parallel()
	var bound []string
	for _, s := range outbox.StatementsForTest() {
		bound = append(bound, s.Name)
	}
	require.ElementsMatch(t, outbox.LoadedStatementsForTest(), bound,
		"bind every statement of the .sql files once, with namedsql.Bind in sql.go, and list it in statements")
}

// TestStatementsMatchTheirGoTypes has the database describe every statement
// (prepared, not run): what sqlc checks when it generates code. The
// placeholders were checked against the argument structs when the package
// was initialised; here every result column must be a field of the row
// struct and every field a column, by name, which is how the rows are read.
func TestStatementsMatchTheirGoTypes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	conn, err := b.pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	require.NoError(t, namedsql.CheckColumns(t.Context(), conn.Conn(), outbox.StatementsForTest()...))
}
