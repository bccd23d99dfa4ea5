package main

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/outflow/outflow/outbox"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// SchemaVersionTable records the versions of the inventory's own
// migrations: a table of its own, neither goose's default goose_db_version
// nor the outbox's outflow_schema_version.
const SchemaVersionTable = "inventory_schema_version"

// Migrate brings db up to date: the inventory's own tables (inventory_stock,
// inventory_reservations, inventory_reservation_items, inventory_requests)
// with its goose migrations, versions in [SchemaVersionTable], and the
// outbox's tables with outbox.Migrate. Idempotent; concurrent callers are
// serialised by advisory locks.
func Migrate(ctx context.Context, db *pgxpool.Pool) error {
	files, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	h := fnv.New64a()
	h.Write([]byte("outflow inventory migrations"))
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64()>>1)), lock.WithLockTimeout(1, 300))
	if err != nil {
		return err
	}
	sqlDB := stdlib.OpenDBFromPool(db) // closing it leaves the pool open
	defer sqlDB.Close()
	own, err := goose.NewProvider(goose.DialectPostgres, sqlDB, files,
		goose.WithTableName(SchemaVersionTable),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return err
	}
	if _, err := own.Up(ctx); err != nil {
		return fmt.Errorf("migrate the inventory schema: %w", err)
	}
	if err := outbox.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate the outbox schema: %w", err)
	}
	return nil
}
