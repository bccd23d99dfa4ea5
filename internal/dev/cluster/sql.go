package cluster

import (
	"embed"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed cluster.sql
var sqlFiles embed.FS

// The cluster's statements (cluster.sql), bound to their Go types when the
// package is initialised.
var (
	queries = namedsql.MustLoad(sqlFiles, "cluster.sql")

	qTerminateBackends = namedsql.Bind[temporalDatabasesArgs, int64](queries, "TerminateBackends")
	qConnections       = namedsql.Bind[temporalDatabasesArgs, connectionsRow](queries, "Connections")
	qDatabaseExists    = namedsql.Bind[databaseArgs, bool](queries, "DatabaseExists")
	qDatabasesLike     = namedsql.Bind[patternArgs, string](queries, "DatabasesLike")
	qShards            = namedsql.Bind[namedsql.NoArgs, shardRow](queries, "Shards")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{
	qTerminateBackends.Info(),
	qConnections.Info(),
	qDatabaseExists.Info(),
	qDatabasesLike.Info(),
	qShards.Info(),
}

// temporalDatabasesArgs name the cluster's two Temporal databases.
type temporalDatabasesArgs struct {
	Main       string `db:"main"`
	Visibility string `db:"visibility"`
}

type connectionsRow struct {
	Main       int64 `db:"main"`
	Visibility int64 `db:"visibility"`
}

type databaseArgs struct {
	Name string `db:"name"`
}

type patternArgs struct {
	Pattern string `db:"pattern"`
}

// shardRow is a row of Temporal's shards table.
type shardRow struct {
	ShardID      int32  `db:"shard_id"`
	Data         []byte `db:"data"`
	DataEncoding string `db:"data_encoding"`
}
