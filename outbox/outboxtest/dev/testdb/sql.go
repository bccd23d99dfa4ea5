package testdb

import (
	"embed"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed testdb.sql
var sqlFiles embed.FS

// testdb's own statements (testdb.sql), bound to their Go types when the
// package is initialised.
var (
	queries = namedsql.MustLoad(sqlFiles, "testdb.sql")

	qLockTemplates         = namedsql.Bind[lockArgs, namedsql.NoRows](queries, "LockTemplates")
	qUnlockTemplates       = namedsql.Bind[lockArgs, namedsql.NoRows](queries, "UnlockTemplates")
	qTemplateReady         = namedsql.Bind[databaseArgs, bool](queries, "TemplateReady")
	qTerminateSlotSessions = namedsql.Bind[databaseArgs, int64](queries, "TerminateSlotSessions")
	qDropIdleSlots         = namedsql.Bind[databaseArgs, namedsql.NoRows](queries, "DropIdleSlots")
	qLogPartition          = namedsql.Bind[aggregateArgs, int](queries, "LogPartition")
	qSetSourceFor          = namedsql.Bind[sourceArgs, string](queries, "SetSourceFor")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{
	qLockTemplates.Info(),
	qUnlockTemplates.Info(),
	qTemplateReady.Info(),
	qTerminateSlotSessions.Info(),
	qDropIdleSlots.Info(),
	qLogPartition.Info(),
	qSetSourceFor.Info(),
}

// templateLock is the advisory lock key the template builders share.
const templateLock = 73617461

type lockArgs struct {
	LockKey int64 `db:"lock_key"`
}

type databaseArgs struct {
	Name string `db:"name"`
}

type aggregateArgs struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
}

type sourceArgs struct {
	Source string `db:"source"`
}
