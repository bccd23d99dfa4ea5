package main

import (
	"context"

	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/outbox/outboxtest/dev/pgcluster"
)

// ensurePostgres reuses DATABASE_URL, else the local default server, else
// starts a throwaway server in dir (see pgcluster.Ensure): a directory of its
// own (.data/cluster/postgres) and port, so `make demo` and `make cluster`
// never start the same data directory twice.
func ensurePostgres(ctx context.Context, dir string) (*pgcluster.Server, error) {
	return pgcluster.Ensure(ctx, pgcluster.EnsureOptions{
		Dir:           dir,
		DefaultURL:    database.DefaultURL,
		PreferredPort: 55433,
		Say:           say,
	})
}
