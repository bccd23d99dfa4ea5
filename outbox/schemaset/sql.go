package schemaset

import (
	"embed"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed schemaset.sql
var sqlFiles embed.FS

// The package's statements (schemaset.sql), bound to their Go types when the
// package is initialised. They run on goose's database/sql transaction, so
// callers send [namedsql.Stmt.SQL] with [namedsql.Stmt.Args].
var (
	queries = namedsql.MustLoad(sqlFiles, "schemaset.sql")

	qLockSet       = namedsql.Bind[lockArgs, namedsql.NoRows](queries, "LockSet")
	qTablesPresent = namedsql.Bind[tablesArgs, tablesPresentRow](queries, "TablesPresent")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{
	qLockSet.Info(),
	qTablesPresent.Info(),
}

type lockArgs struct {
	LockKey int64 `db:"lock_key"`
}

type tablesArgs struct {
	Tables []string `db:"tables"`
}

type tablesPresentRow struct {
	PresentCount int64  `db:"present_count"`
	Present      string `db:"present"`
}
