package codec_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/dev/testdb"
	"github.com/outflow/outflow/internal/namedsql"
)

// TestEveryStatementIsBound: each statement of the package's .sql files is
// bound to its Go types, so none is reached by a name string.
func TestEveryStatementIsBound(t *testing.T) {
	t.Parallel()
	var bound []string
	for _, s := range codec.StatementsForTest() {
		bound = append(bound, s.Name)
	}
	require.ElementsMatch(t, codec.LoadedStatementsForTest(), bound,
		"bind every statement of the .sql files once, with namedsql.Bind in store.go, and list it in statements")
}

// TestStatementsMatchTheirGoTypes has the database describe every statement
// and checks its columns against the row type it is read into.
func TestStatementsMatchTheirGoTypes(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	conn, err := pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()
	require.NoError(t, namedsql.CheckColumns(t.Context(), conn.Conn(), codec.StatementsForTest()...))
}
