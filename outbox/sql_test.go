package outbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

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
		"bind every statement of the .sql files once, with newStmt in sql.go")
}

// TestStatementsMatchTheirGoTypes has the database describe every statement
// (prepared, not run): what sqlc checks when it generates code. The
// placeholders were checked against the argument structs when the package
// was initialised; here every result column must be a field of the row
// struct and every field a column, by name, which is how the rows are read.
func TestStatementsMatchTheirGoTypes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := context.Background()
	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	for _, s := range outbox.StatementsForTest() {
		sd, err := conn.Conn().Prepare(ctx, "", s.SQL)
		require.NoError(t, err, s.Name)
		var columns []string
		for _, f := range sd.Fields {
			columns = append(columns, f.Name)
		}
		switch {
		case !s.ReadsRows:
			// An :exec statement; its rows (if any) are discarded.
		case s.OneColumn:
			require.Len(t, columns, 1, "%s is read as a single column", s.Name)
		default:
			require.ElementsMatch(t, s.Columns, columns, "%s: its row struct's db tags and its result columns", s.Name)
		}
	}
}
