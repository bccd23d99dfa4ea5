package inbox

import (
	"embed"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed inbox.sql
var sqlFiles embed.FS

// The package's statements (inbox.sql), bound to their Go types when the
// package is initialised.
var (
	queries = namedsql.MustLoad(sqlFiles, "inbox.sql")
	qRecord = namedsql.Bind[keyArgs, uuid.UUID](queries, "InboxRecord")
	qSeen   = namedsql.Bind[keyArgs, bool](queries, "InboxSeen")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{qRecord.Info(), qSeen.Info()}

// keyArgs is an inbox row's key.
type keyArgs struct {
	ConsumerName string    `db:"consumer_name"`
	EventID      uuid.UUID `db:"event_id"`
}
