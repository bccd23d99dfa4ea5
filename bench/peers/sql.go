package main

import (
	"embed"
	"time"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed peers.sql
var sqlFiles embed.FS

// The bench's own statements (peers.sql), bound to their Go types when the
// package is initialised.
var (
	queries = namedsql.MustLoad(sqlFiles, "peers.sql")

	qWALPosition        = namedsql.Bind[namedsql.NoArgs, int64](queries, "WALPosition")
	qOtherClients       = namedsql.Bind[namedsql.NoArgs, int64](queries, "OtherClients")
	qClearStatsSnapshot = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "ClearStatsSnapshot")
	qTupleChurn         = namedsql.Bind[namedsql.NoArgs, int64](queries, "TupleChurn")
	qAnalyze            = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "Analyze")
	qDropSlot           = namedsql.Bind[slotArgs, namedsql.NoRows](queries, "DropSlot")
	qTransactionID      = namedsql.Bind[namedsql.NoArgs, int64](queries, "TransactionID")
	qQueueTables        = namedsql.Bind[tablesArgs, queueTables](queries, "QueueTables")
	qPostmasterStart    = namedsql.Bind[namedsql.NoArgs, time.Time](queries, "PostmasterStart")

	// The contenders' Pending statements, each on its own contender's tables.
	qOutflowPending    = namedsql.Bind[namedsql.NoArgs, int64](queries, "OutflowPending")
	qOutflowLogPending = namedsql.Bind[namedsql.NoArgs, int64](queries, "OutflowLogPending")
	qRiverPending      = namedsql.Bind[namedsql.NoArgs, int64](queries, "RiverPending")
	qWatermillPending  = namedsql.Bind[namedsql.NoArgs, int64](queries, "WatermillPending")
	qDBOSPending       = namedsql.Bind[namedsql.NoArgs, int64](queries, "DBOSPending")
	// qWatermillForwarderPending is the Watermill forwarder's, on the
	// forwarder's topic (the JetStream phase).
	qWatermillForwarderPending = namedsql.Bind[namedsql.NoArgs, int64](queries, "WatermillForwarderPending")
)

// statements describes every bound statement, for the test that has a
// database with outflow's schema and River's, Watermill's and DBOS's tables check
// them.
var statements = []namedsql.Info{
	qWALPosition.Info(),
	qOtherClients.Info(),
	qClearStatsSnapshot.Info(),
	qTupleChurn.Info(),
	qAnalyze.Info(),
	qDropSlot.Info(),
	qTransactionID.Info(),
	qQueueTables.Info(),
	qPostmasterStart.Info(),
	qOutflowPending.Info(),
	qOutflowLogPending.Info(),
	qRiverPending.Info(),
	qWatermillPending.Info(),
	qDBOSPending.Info(),
	qWatermillForwarderPending.Info(),
}

// pendingStmt is a contender's Pending statement: one count, no arguments.
type pendingStmt = namedsql.Stmt[namedsql.NoArgs, int64]

type slotArgs struct {
	Slot string `db:"slot"`
}

// tablesArgs are LIKE patterns on schema.table.
type tablesArgs struct {
	Tables []string `db:"tables"`
}

// queueTables is what QueueTables reads.
type queueTables struct {
	DeadTuples int64 `db:"dead_tuples"`
	TableBytes int64 `db:"table_bytes"`
}
