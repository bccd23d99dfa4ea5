package outboxops

import "github.com/outflow/outflow/outbox/namedsql"

// QueriesForTest are the statements of operations.sql.
func QueriesForTest() namedsql.Queries { return queries }

// StatementsForTest describes the package's bound statements.
func StatementsForTest() []namedsql.Info { return statements }
