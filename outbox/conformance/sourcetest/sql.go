package sourcetest

import (
	"embed"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed sourcetest.sql
var sqlFiles embed.FS

// The suite's statements (sourcetest.sql), bound when the package is
// initialised.
var (
	queries         = namedsql.MustLoad(sqlFiles, "sourcetest.sql")
	qEndConnections = namedsql.Bind[endConnectionsArgs, namedsql.NoRows](queries, "SourcetestEndConnections")
)

type endConnectionsArgs struct {
	ApplicationName string `db:"application_name"`
}
