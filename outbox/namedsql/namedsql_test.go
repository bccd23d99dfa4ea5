package namedsql

import (
	"strings"
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

func TestMustLoadAll(t *testing.T) {
	t.Parallel()
	all := MustLoadAll(fstest.MapFS{
		"a.sql": {Data: []byte("-- name: A\nSELECT 1;\n")},
		"b.sql": {Data: []byte("-- name: B\nSELECT 2;\n")},
	})
	require.Equal(t, "SELECT 2", strings.TrimSpace(all.Get("B")))
	require.PanicsWithValue(t, `namedsql: b.sql: statement "A" is also defined in another .sql file`, func() {
		MustLoadAll(fstest.MapFS{
			"a.sql": {Data: []byte("-- name: A\nSELECT 1;\n")},
			"b.sql": {Data: []byte("-- name: A\nSELECT 2;\n")},
		})
	})
	require.Panics(t, func() { MustLoadAll(fstest.MapFS{}) })
}

func TestMustMerge(t *testing.T) {
	t.Parallel()
	all := MustMerge(Queries{"A": "SELECT 1"}, Queries{"B": "SELECT 2"})
	require.Equal(t, Queries{"A": "SELECT 1", "B": "SELECT 2"}, all)
	require.PanicsWithValue(t, `namedsql: statement "A" is defined in two sets`, func() {
		MustMerge(Queries{"A": "SELECT 1"}, Queries{"A": "SELECT 2"})
	})
}

func TestBindChecksPlaceholders(t *testing.T) {
	t.Parallel()
	q := Queries{
		"Find":  "SELECT id, name FROM t WHERE id = @id AND name = @name",
		"Count": "SELECT count(*) FROM t",
		"Touch": "UPDATE t SET at = now() WHERE id = @id",
	}
	type findArgs struct {
		ID   int    `db:"id"`
		Name string `db:"name"`
	}
	type row struct {
		ID   int    `db:"id"`
		Name string `db:"name"`
	}
	s := Bind[findArgs, row](q, "Find")
	require.Equal(t, Info{Name: "Find", Positional: "SELECT id, name FROM t WHERE id = $1 AND name = $2",
		Columns: []string{"id", "name"}, ReadsRows: true}, s.Info())
	require.Equal(t, Info{Name: "Count", Positional: "SELECT count(*) FROM t", ReadsRows: true},
		Bind[NoArgs, int64](q, "Count").Info())
	require.False(t, Bind[struct {
		ID int `db:"id"`
	}, NoRows](q, "Touch").Info().ReadsRows)

	require.PanicsWithValue(t, `namedsql: no statement named "Nope"`, func() { Bind[NoArgs, int64](q, "Nope") })
	require.Panics(t, func() { Bind[struct{ ID int }, row](q, "Find") }, "a placeholder without a field")
	require.Panics(t, func() {
		Bind[struct {
			ID    int    `db:"id"`
			Name  string `db:"name"`
			Extra string `db:"extra"`
		}, row](q, "Find")
	}, "a field without a placeholder")
	require.Panics(t, func() { Bind[int, row](q, "Find") }, "arguments must be a struct")
	require.Panics(t, func() { _, _ = s.Value(t.Context(), nil, findArgs{}) }, "a row of columns is read with All")
}

func TestUnbound(t *testing.T) {
	t.Parallel()
	q := Queries{"A": "SELECT 1", "B": "SELECT 2", "C": "SELECT 3"}
	a := Bind[NoArgs, int](q, "A")
	b := Bind[NoArgs, NoRows](q, "B")
	require.Empty(t, Unbound(Queries{"A": "SELECT 1", "B": "SELECT 2"}, a.Info(), b.Info()))
	require.Equal(t, []string{
		"statement A is listed twice",
		"statement C is not bound: bind it with namedsql.Bind and list its Info",
	}, Unbound(q, a.Info(), b.Info(), a.Info()))
	require.Equal(t, []string{"statement B is not one of the loaded set"}, Unbound(Queries{"A": "SELECT 1"}, a.Info(), b.Info()))
}
