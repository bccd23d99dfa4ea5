package inbox

import "github.com/outflow/outflow/internal/namedsql"

// StatementsForTest describes the package's bound statements.
func StatementsForTest() []namedsql.Info { return statements }
