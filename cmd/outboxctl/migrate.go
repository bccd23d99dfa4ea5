package main

import (
	"context"
	"fmt"

	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox/ctl"
)

// runMigrate applies pending migrations: the outbox's schema and its CDC
// publication, and the order app's where it is installed or --order-app
// asks for it; --outbox-only leaves the order app's alone even where it is
// installed. Concurrent runs are serialised by each schema's advisory
// lock, so it is safe to run from every deploy. A database migrated before
// the schema was split in two (goose_db_version) is adopted in place.
func runMigrate(ctx context.Context, env *ctl.Env, args []string) error {
	fs := ctl.NewFlagSet(env, "migrate", "migrate [--order-app | --outbox-only] [--system-database]\n\n"+
		"Brings DATABASE_URL's outbox schema (and CDC publication) to this build's version. On a database\n"+
		"that holds outflow's example order app it brings that schema up to date too; --order-app installs\n"+
		"it on a database that has none (the demo's, the order service's).")
	orderApp := fs.Bool("order-app", false, "also install or update the example order app's tables (orders, idempotency_keys, customer_keys, ...)")
	outboxOnly := fs.Bool("outbox-only", false, "only the outbox's schema, even where the order app's is installed")
	systemDB := ctl.SystemDatabaseFlag(fs)
	pos, err := ctl.Parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return ctl.Usagef(fs, "migrate takes no arguments, got %q", pos)
	}
	if *orderApp && *outboxOnly {
		return ctl.Usagef(fs, "--order-app and --outbox-only contradict each other: pass one")
	}
	pool, err := database.Open(ctx, env.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := ctl.RefuseSystemDatabase(ctx, pool, *systemDB); err != nil {
		return err
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
	report, err := up(ctx, pool, env.Logger)
	if err != nil {
		return err
	}
	for _, line := range report.Lines() {
		fmt.Fprintln(env.Stdout, line)
	}
	return nil
}
