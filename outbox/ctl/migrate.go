package ctl

import (
	"context"
	"fmt"
	"slices"

	"github.com/outflow/outflow/outbox/cmdkit"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/schemaset"
)

// systemDatabases are PostgreSQL's own databases, which a default or
// mistyped DATABASE_URL names by accident: migrate refuses them unless
// --system-database says it is meant.
var systemDatabases = []string{"postgres", "template0", "template1"}

// outboxVersionTable is the outbox's schema set's, registered by package
// outbox (outbox.Migrate).
const outboxVersionTable = "outflow_schema_version"

// SystemDatabaseFlag adds migrate's --system-database to fs.
func SystemDatabaseFlag(fs interface {
	Bool(name string, value bool, usage string) *bool
}) *bool {
	return fs.Bool("system-database", false, "allow migrating PostgreSQL's own database (postgres, template0, template1), refused otherwise")
}

// RefuseSystemDatabase returns an error when q's database is one of
// PostgreSQL's own and allowed (--system-database) is false.
func RefuseSystemDatabase(ctx context.Context, q namedsql.Querier, allowed bool) error {
	name, err := qDatabaseName.One(ctx, q, namedsql.NoArgs{})
	if err != nil {
		return err
	}
	if slices.Contains(systemDatabases, name) && !allowed {
		return fmt.Errorf("refusing to migrate %q, PostgreSQL's own database (a DATABASE_URL left at its default names it): "+
			"point DATABASE_URL at your service's database, e.g. postgres://app@host:5432/billing, or pass --system-database if you mean it", name)
	}
	return nil
}

// runMigrate applies the outbox's pending migrations and its cdc
// publication (outbox.Migrate), reporting what it adopted and applied.
// Concurrent runs are serialised by the schema's advisory lock, so it is
// safe to run from every deploy.
func runMigrate(ctx context.Context, env *Env, args []string) error {
	fs := NewFlagSet(env, "migrate", "migrate [--system-database]\n\n"+
		"Brings DATABASE_URL's outbox schema (and CDC publication) to this build's version.")
	systemDB := SystemDatabaseFlag(fs)
	pos, err := Parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return Usagef(fs, "migrate takes no arguments, got %q", pos)
	}
	pool, err := cmdkit.Open(ctx, env.DatabaseURL, nil)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := RefuseSystemDatabase(ctx, pool, *systemDB); err != nil {
		return err
	}
	set := schemaset.Lookup(outboxVersionTable)
	res, err := set.Up(ctx, pool, env.Logger)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, set.Describe(res))
	return nil
}
