package main

import (
	"embed"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed bench.sql
var sqlFiles embed.FS

// The bench's own statements (bench.sql), bound to their Go types when the
// package is initialised.
var (
	queries = namedsql.MustLoad(sqlFiles, "bench.sql")

	qSeedPending          = namedsql.Bind[seedArgs, namedsql.NoRows](queries, "SeedPending")
	qSeedPublished        = namedsql.Bind[seedPublishedArgs, namedsql.NoRows](queries, "SeedPublished")
	qAnalyzeOutbox        = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "AnalyzeOutbox")
	qVacuumScratch        = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "VacuumScratch")
	qCheckpoint           = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "Checkpoint")
	qTruncateOutbox       = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "TruncateOutbox")
	qSeedTraceContexts    = namedsql.Bind[seedTraceArgs, namedsql.NoRows](queries, "SeedTraceContexts")
	qCountPending         = namedsql.Bind[namedsql.NoArgs, int64](queries, "CountPending")
	qBackendPID           = namedsql.Bind[namedsql.NoArgs, int](queries, "BackendPID")
	qDatabaseTransactions = namedsql.Bind[databaseArgs, int64](queries, "DatabaseTransactions")
	qDropSlot             = namedsql.Bind[slotArgs, namedsql.NoRows](queries, "DropSlot")
	qNotify               = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "Notify")
	qSlotPassed           = namedsql.Bind[slotPassedArgs, bool](queries, "SlotPassed")
	qCurrentWAL           = namedsql.Bind[namedsql.NoArgs, string](queries, "CurrentWAL")
	qOutboxTupleChanges   = namedsql.Bind[namedsql.NoArgs, int64](queries, "OutboxTupleChanges")
	qSeedLog              = namedsql.Bind[seedArgs, namedsql.NoRows](queries, "SeedLog")
	qCountLogPending      = namedsql.Bind[namedsql.NoArgs, int64](queries, "CountLogPending")
	qNotifyLog            = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "NotifyLog")
	qLogTupleChanges      = namedsql.Bind[namedsql.NoArgs, int64](queries, "LogTupleChanges")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{
	qSeedPending.Info(),
	qSeedTraceContexts.Info(),
	qSeedPublished.Info(),
	qAnalyzeOutbox.Info(),
	qVacuumScratch.Info(),
	qCheckpoint.Info(),
	qTruncateOutbox.Info(),
	qCountPending.Info(),
	qBackendPID.Info(),
	qDatabaseTransactions.Info(),
	qDropSlot.Info(),
	qNotify.Info(),
	qSlotPassed.Info(),
	qCurrentWAL.Info(),
	qOutboxTupleChanges.Info(),
	qSeedLog.Info(),
	qCountLogPending.Info(),
	qNotifyLog.Info(),
	qLogTupleChanges.Info(),
}

// seedArgs are SeedPending's: Events unpublished events over Aggregates
// aggregates.
type seedArgs struct {
	Events     int `db:"events"`
	Aggregates int `db:"aggregates"`
}

// seedTraceArgs are SeedTraceContexts': the fraction of events whose
// trace was sampled.
type seedTraceArgs struct {
	Sampled float64 `db:"sampled"`
}

type seedPublishedArgs struct {
	Events int `db:"events"`
}

type databaseArgs struct {
	Database string `db:"database"`
}

type slotArgs struct {
	Slot string `db:"slot"`
}

type slotPassedArgs struct {
	Slot string `db:"slot"`
	LSN  string `db:"lsn"`
}
