package outboxops

import (
	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/namedsql"
)

// QueriesForTest are the package's statements.
func QueriesForTest() namedsql.Queries { return queries }

// StatementsForTest describes the package's bound statements.
func StatementsForTest() []namedsql.Info { return statements }

// LogEventByIDStatementForTest is the operator's lookup of a log event by
// id (LogOpEvents) and its arguments, for EXPLAIN.
func LogEventByIDStatementForTest(id uuid.UUID) (string, []any) {
	return qLogOpEvents.SQL(), qLogOpEvents.Args(logOpEventsArgs{EventIDs: []uuid.UUID{id}})
}
