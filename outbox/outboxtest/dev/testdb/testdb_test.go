package testdb

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewIsMigratedAndIsolated(t *testing.T) {
	t.Parallel()
	a, _ := New(t)
	b, _ := New(t)
	ctx := context.Background()
	_, err := a.Exec(ctx, "INSERT INTO processed_events (consumer_name, event_id) VALUES ('t', gen_random_uuid())")
	require.NoError(t, err)
	var n int
	require.NoError(t, b.QueryRow(ctx, "SELECT count(*) FROM processed_events").Scan(&n))
	require.Zero(t, n, "databases must be isolated")
	require.NoError(t, a.QueryRow(ctx, "SELECT count(*) FROM processed_events").Scan(&n))
	require.Equal(t, 1, n)
}

func TestWithDatabase(t *testing.T) {
	t.Parallel()
	require.Equal(t, "postgres://postgres@127.0.0.1:5432/x?sslmode=disable",
		withDatabase("postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "x"))
	require.Equal(t, "postgres://u@h/x", withDatabase("postgres://u@h/db", "x"))
}

// TestStatements: every statement of testdb.sql is bound in sql.go and
// reads the columns the database describes.
func TestStatements(t *testing.T) {
	t.Parallel()
	CheckStatements(t, queries, statements...)
}
