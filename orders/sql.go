package orders

import (
	"embed"

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
var queries = namedsql.MustLoadAll(sqlFiles)

// SQL returns the text of the statement called name in the package's .sql
// files (e.g. InsertOrder), exactly as this package sends it. It exists for
// cmd/bench, whose order-only transaction must run the same insert as
// [CreateOrderTx] to measure what the outbox adds; applications have no use
// for it. It panics on an unknown name.
func SQL(name string) string { return queries.Get(name) }
