package invoices

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/outflow/outflow/outbox"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate brings db up to date: the service's own tables with its own goose
// migrations (goose's default version table, goose_db_version), and the
// outbox's tables with outbox.Migrate (its own version table,
// outflow_schema_version). Neither sees the other's versions.
func Migrate(ctx context.Context, db *pgxpool.Pool) error {
	files, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	sqlDB := stdlib.OpenDBFromPool(db) // closing it leaves the pool open
	defer sqlDB.Close()
	own, err := goose.NewProvider(goose.DialectPostgres, sqlDB, files)
	if err != nil {
		return err
	}
	if _, err := own.Up(ctx); err != nil {
		return fmt.Errorf("migrate the invoices schema: %w", err)
	}
	if err := outbox.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate the outbox schema: %w", err)
	}
	return nil
}
