package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox/namedsql"
)

func databaseURL() string { return database.URL() }

// systemDatabases are PostgreSQL's own databases, which a default or
// mistyped DATABASE_URL names by accident: migrate refuses them unless
// --system-database says it is meant.
var systemDatabases = []string{"postgres", "template0", "template1"}

// runMigrate applies pending migrations: the outbox's schema and its CDC
// publication, and the order app's where it is installed or --order-app
// asks for it; --outbox-only leaves the order app's alone even where it is
// installed. Concurrent runs are serialised by each schema's advisory
// lock, so it is safe to run from every deploy. A database migrated before
// the schema was split in two (goose_db_version) is adopted in place.
func runMigrate(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "migrate", "migrate [--order-app | --outbox-only] [--system-database]\n\n"+
		"Brings DATABASE_URL's outbox schema (and CDC publication) to this build's version. On a database\n"+
		"that holds outflow's example order app it brings that schema up to date too; --order-app installs\n"+
		"it on a database that has none (the demo's, the order service's).")
	orderApp := fs.Bool("order-app", false, "also install or update the example order app's tables (orders, idempotency_keys, customer_keys, ...)")
	outboxOnly := fs.Bool("outbox-only", false, "only the outbox's schema, even where the order app's is installed")
	systemDB := fs.Bool("system-database", false, "allow migrating PostgreSQL's own database (postgres, template0, template1), refused otherwise")
	pos, err := parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "migrate takes no arguments, got %q", pos)
	}
	if *orderApp && *outboxOnly {
		return usagef(fs, "--order-app and --outbox-only contradict each other: pass one")
	}
	pool, err := database.Open(ctx, env.databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	name, err := qDatabaseName.One(ctx, pool, namedsql.NoArgs{})
	if err != nil {
		return err
	}
	if slices.Contains(systemDatabases, name) && !*systemDB {
		return fmt.Errorf("refusing to migrate %q, PostgreSQL's own database (a DATABASE_URL left at its default names it): "+
			"point DATABASE_URL at your service's database, e.g. postgres://app@host:5432/billing, or pass --system-database if you mean it", name)
	}
	up := migrations.UpOutbox
	switch {
	case *orderApp:
		up = migrations.Up
	case !*outboxOnly:
		installed, err := migrations.OrdersInstalled(ctx, pool)
		if err != nil {
			return err
		}
		if installed {
			up = migrations.Up
		}
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
