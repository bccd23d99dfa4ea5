package pgcluster

import (
	"embed"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed pgcluster.sql
var sqlFiles embed.FS

// pgcluster's statements (pgcluster.sql), bound to their Go types when the
// package is initialised.
var (
	queries = namedsql.MustLoad(sqlFiles, "pgcluster.sql")

	qWALLevel = namedsql.Bind[namedsql.NoArgs, string](queries, "WALLevel")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{
	qWALLevel.Info(),
}
