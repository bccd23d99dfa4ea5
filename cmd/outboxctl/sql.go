package main

import (
	"embed"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed *.sql
var sqlFiles embed.FS

// outboxctl's own statements (forget.sql, orderapp.sql), bound to their Go
// types when the package is initialised. The outbox's statements are
// package outbox's and outboxops'; these are the order-specific parts'.
var (
	queries = namedsql.MustLoadAll(sqlFiles)

	qCustomerOrders = namedsql.Bind[customerOrdersArgs, string](queries, "CustomerOrders")
	qMissingTables  = namedsql.Bind[missingTablesArgs, string](queries, "MissingTables")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{
	qCustomerOrders.Info(),
	qMissingTables.Info(),
}

type customerOrdersArgs struct {
	Email string `db:"email"`
}

type missingTablesArgs struct {
	Tables []string `db:"tables"`
}
