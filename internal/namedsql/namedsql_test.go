package namedsql

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"q.sql":   {Data: []byte("-- leading comment\n-- name: One :one\nSELECT 1;\n\n-- name: Two :exec\nUPDATE t\nSET a = 1;\n")},
		"dup.sql": {Data: []byte("-- name: A\nSELECT 1;\n-- name: A\nSELECT 2;\n")},
		"nil.sql": {Data: []byte("-- name: A\n\n")},
	}
	q, err := Load(fsys, "q.sql")
	require.NoError(t, err)
	require.Equal(t, "SELECT 1", q.Get("One"))
	require.Equal(t, "UPDATE t\nSET a = 1", q.Get("Two"))
	require.Panics(t, func() { q.Get("Three") })

	_, err = Load(fsys, "dup.sql")
	require.ErrorContains(t, err, "defined twice")
	_, err = Load(fsys, "nil.sql")
	require.ErrorContains(t, err, "empty")
	_, err = Load(fsys, "missing.sql")
	require.Error(t, err)
}
