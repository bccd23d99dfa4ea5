package main

import (
	"context"
	"fmt"

	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/migrations"
)

const defaultURLHint = database.DefaultURL

func databaseURL() string { return database.URL() }

// runMigrate applies pending migrations; concurrent runs are serialised by
// goose's advisory lock, so it is safe to run from every deploy.
func runMigrate(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "migrate", "migrate")
	pos, err := parse(fs, args)
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
	version, err := migrations.Up(ctx, pool, env.logger)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "schema is at version %d\n", version)
	return nil
}
