package codec

import "github.com/outflow/outflow/outbox/namedsql"

// QueriesForTest are the statements of the package's .sql files.
func QueriesForTest() namedsql.Queries { return queries }

// StatementsForTest describes the package's bound statements.
func StatementsForTest() []namedsql.Info { return statements }
