package outbox

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/schemaset"
)

// migrationFiles are the outbox's own migrations (goose SQL files). Their
// numbers are those of the single sequence the outbox shared with outflow's
// order app until it got a version table of its own, hence the gaps.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// schemaVersionTable records the versions [Migrate] applied: never goose's
// default goose_db_version, which the application's own goose may use.
const schemaVersionTable = "outflow_schema_version"

// ErrSchemaOutdated is wrapped by the error [CheckSchema] returns when the
// database lacks a migration of the outbox's schema this build carries.
var ErrSchemaOutdated = errors.New("outbox: the outbox schema is outdated")

// schema is the outbox's migration set, registered so that outflow's own
// tooling (outboxctl migrate, its test databases) applies and fingerprints
// it with the order app's.
var schema = schemaset.Register(&schemaset.Set{
	Name:         "outbox",
	Table:        schemaVersionTable,
	Files:        mustSub(migrationFiles, "migrations"),
	LegacyTables: []string{"outbox_events", "outbox_sequences", "processed_events"},
	Outdated:     ErrSchemaOutdated,
	Fix:          "apply it with outbox.Migrate (outflow's own database: `outboxctl migrate`)",
})

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// Migrate applies the outbox's own schema to db and nothing else: the
// tables outbox_events, outbox_sequences, processed_events (the inbox),
// outbox_cleanup_horizon, outbox_replay_horizon and outbox_bulk_retries,
// the lane functions outbox_unpublished_predecessors and
// outbox_unpublished_log_predecessors, the log source's tables, and the
// publication outflow_outbox the cdc source streams (inserts into
// outbox_events; it costs nothing until a replication slot streams it). It
// needs to own outbox_events, which it made. It records its
// versions in the table outflow_schema_version, so the application's own
// migrations, goose's default goose_db_version included, live beside it
// without either seeing the other's versions.
//
// Call it before the relay or Enqueue first runs, from a deploy step or at
// start-up: it is idempotent, and concurrent calls (every replica starting
// at once) are serialised by an advisory lock. It applies each migration
// in a transaction of its own, on one of the pool's connections at a time.
//
// A database that outflow migrated before the outbox had its own version
// table (goose_db_version holding outflow's versions 1..N, the outbox's
// tables present) is adopted: Migrate records the versions it already has
// and applies the rest, losing nothing. goose_db_version is left as it is.
func Migrate(ctx context.Context, db *pgxpool.Pool) error {
	_, err := schema.Up(ctx, db, nil)
	return err
}

// CheckSchema returns an error wrapping [ErrSchemaOutdated], naming the
// versions, when db lacks a migration of the outbox's schema this build
// carries: for a binary that leaves migrating to a deploy step and should
// refuse to run on a schema it was not built for. It only reads.
func CheckSchema(ctx context.Context, db *pgxpool.Pool) error {
	if err := schema.Check(ctx, db); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}
