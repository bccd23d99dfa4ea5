package ctl

import (
	"embed"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed *.sql
var sqlFiles embed.FS

// outboxctl's own statements (migrate.sql), bound to their Go types when
// the package is initialised; the outbox's are package outbox's and
// outboxops'.
var (
	queries = namedsql.MustLoadAll(sqlFiles)

	qDatabaseName = namedsql.Bind[namedsql.NoArgs, string](queries, "DatabaseName")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{
	qDatabaseName.Info(),
}
