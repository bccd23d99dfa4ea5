package codec

import (
	"maps"
	"slices"

	"github.com/outflow/outflow/internal/namedsql"
)

// StatementsForTest describes the package's bound statements.
func StatementsForTest() []namedsql.Info { return statements }

// LoadedStatementsForTest lists every statement of the package's .sql files.
func LoadedStatementsForTest() []string { return slices.Sorted(maps.Keys(queries)) }
