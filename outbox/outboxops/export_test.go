package outboxops

import "github.com/outflow/outflow/internal/namedsql"

// StatementsForTest describes the package's bound statements.
func StatementsForTest() []namedsql.Info { return statements }

// LoadedStatementsForTest lists every statement of operations.sql.
func LoadedStatementsForTest() []string {
	names := make([]string, 0, len(queries))
	for name := range queries {
		names = append(names, name)
	}
	return names
}
