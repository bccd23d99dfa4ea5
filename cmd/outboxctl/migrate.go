package main

import (
	"context"
	"fmt"

	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/migrations"
)

func databaseURL() string { return database.URL() }

// runMigrate applies pending migrations: the outbox's schema and its CDC
// publication, then (unless --outbox-only) the order app's. Concurrent runs
// are serialised by each schema's advisory lock, so it is safe to run from
// every deploy. A database migrated before the schema was split in two
// (goose_db_version) is adopted in place.
func runMigrate(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "migrate", "migrate [--outbox-only]")
	outboxOnly := fs.Bool("outbox-only", false, "apply only the outbox's schema and its CDC publication (a service's own database, without outflow's order app)")
	pos, err := parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "migrate takes no arguments, got %q", pos)
	}
	pool, err := database.Open(ctx, env.databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	up := migrations.Up
	if *outboxOnly {
		up = migrations.UpOutbox
	}
	report, err := up(ctx, pool, env.logger)
	if err != nil {
		return err
	}
	for _, line := range report.Lines() {
		fmt.Fprintln(env.stdout, line)
	}
	return nil
}
