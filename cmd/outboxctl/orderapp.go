package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/outflow/outflow/outbox/namedsql"
)

// missingTables returns those of tables the database lacks. outboxctl's
// order-specific parts (skip's settlement of an order, forget-customer)
// run only where the order app's tables exist, and say so elsewhere: a
// team's database may hold the outbox alone.
func missingTables(ctx context.Context, q namedsql.Querier, tables ...string) ([]string, error) {
	missing, err := qMissingTables.All(ctx, q, missingTablesArgs{Tables: tables})
	if err != nil {
		return nil, fmt.Errorf("looking for the order app's tables (%s): %w", strings.Join(tables, ", "), err)
	}
	return missing, nil
}
