package main

import (
	"context"
	"embed"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/internal/namedsql"
)

//go:embed orderapp.sql
var orderAppSQL embed.FS

var orderAppQueries = namedsql.MustLoad(orderAppSQL, "orderapp.sql")

// querier is what missingTables reads through: a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// missingTables returns those of tables the database lacks. outboxctl's
// order-specific parts (skip's settlement of an order, forget-customer)
// run only where the order app's tables exist, and say so elsewhere: a
// team's database may hold the outbox alone.
func missingTables(ctx context.Context, q querier, tables ...string) ([]string, error) {
	rows, err := q.Query(ctx, orderAppQueries.Get("MissingTables"), pgx.StrictNamedArgs{"tables": tables})
	if err != nil {
		return nil, fmt.Errorf("looking for the order app's tables (%s): %w", strings.Join(tables, ", "), err)
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("looking for the order app's tables (%s): %w", strings.Join(tables, ", "), err)
	}
	return missing, nil
}
