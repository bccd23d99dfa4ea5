package main

import (
	"embed"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed database.sql
var sqlFiles embed.FS

// The demo's own statements (database.sql), bound to their Go types when
// the package is initialised.
var (
	queries = namedsql.MustLoad(sqlFiles, "database.sql")

	qDatabaseExists = namedsql.Bind[databaseArgs, bool](queries, "DatabaseExists")
	qDropIdleSlots  = namedsql.Bind[databaseArgs, namedsql.NoRows](queries, "DropIdleSlots")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{
	qDatabaseExists.Info(),
	qDropIdleSlots.Info(),
}

type databaseArgs struct {
	Name string `db:"name"`
}
