package orders

import (
	"embed"
	"fmt"
	"io/fs"
	"maps"

	"github.com/outflow/outflow/internal/namedsql"
)

// sqlFiles are the package's statements: queries.sql (the commands and the
// read model), shipping.sql (the shipping address) and step.sql (the
// projection's steps, [ApplyStepTx]). Every statement that touches the orders
// table is in one of them.
//
//go:embed *.sql
var sqlFiles embed.FS

// queries holds every statement of every .sql file of the package by name:
// the one place the package loads its SQL.
var queries = mustLoadAll(sqlFiles)

// mustLoadAll loads every .sql file of fsys into one set, panicking on a
// malformed file or on a name that two statements share, within one file or
// across files.
func mustLoadAll(fsys fs.FS) namedsql.Queries {
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("orders: no .sql files embedded (%v)", err))
	}
	all := namedsql.Queries{}
	for _, file := range files {
		q := namedsql.MustLoad(fsys, file)
		for name := range q {
			if _, dup := all[name]; dup {
				panic(fmt.Sprintf("orders: %s: statement %q is also defined in another .sql file", file, name))
			}
		}
		maps.Copy(all, q)
	}
	return all
}

// SQL returns the text of the statement called name in the package's .sql
// files (e.g. InsertOrder), exactly as this package sends it. It exists for
// cmd/bench, whose order-only transaction must run the same insert as
// [CreateOrderTx] to measure what the outbox adds; applications have no use
// for it. It panics on an unknown name.
func SQL(name string) string { return queries.Get(name) }
