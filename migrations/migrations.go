// Package migrations holds outflow's versioned schema, embedded in every
// binary, and applies it with pressly/goose.
//
// goose was chosen over jackc/tern because its Provider API takes an fs.FS
// and reports pending versions without applying them (so every binary can
// refuse an outdated schema at start), it serialises concurrent migrators
// with a PostgreSQL advisory lock, and it rejects gaps and duplicate versions
// when it collects the files.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

// FS returns the embedded migration files.
func FS() fs.FS { return files }

// ErrOutdated is returned by [Check] when the database is behind the schema
// this binary was built with.
var ErrOutdated = errors.New("database schema is outdated")

// newProvider opens a goose provider over a database/sql view of the pool.
// The caller closes the returned *sql.DB (which leaves the pool open).
func newProvider(pool *pgxpool.Pool, logger *slog.Logger) (*goose.Provider, *sql.DB, error) {
	db := stdlib.OpenDBFromPool(pool)
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	opts := []goose.ProviderOption{goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true)}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files, opts...)
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("migrations: %w", err)
	}
	return p, db, nil
}

// Up applies every pending migration and returns the resulting version.
// Concurrent callers are serialised by an advisory lock.
func Up(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) (int64, error) {
	p, db, err := newProvider(pool, logger)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if _, err := p.Up(ctx); err != nil {
		return 0, fmt.Errorf("migrations: up: %w", err)
	}
	return p.GetDBVersion(ctx)
}

// Check returns an error wrapping [ErrOutdated] that names the command to run
// when the database is not at the newest embedded version.
func Check(ctx context.Context, pool *pgxpool.Pool) error {
	p, db, err := newProvider(pool, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("migrations: reading schema version: %w", err)
	}
	if current < target {
		return fmt.Errorf("%w: database is at version %d, this binary needs %d; run `outboxctl migrate` (go run ./cmd/outboxctl migrate) against this DATABASE_URL",
			ErrOutdated, current, target)
	}
	return nil
}
