package main

import (
	"context"
	"path/filepath"

	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/outbox/outboxtest/dev/pgcluster"
)

// ensurePostgres reuses DATABASE_URL, else the local default server, else
// starts a throwaway cluster under dataDir/postgres (see pgcluster.Ensure).
// For OUTFLOW_RELAY_SOURCE=cdc a reused server must run with
// wal_level=logical; otherwise the throwaway cluster, configured for both
// sources, takes its place and the demo says why.
func ensurePostgres(ctx context.Context, dataDir string, cdc bool, say func(string, ...any)) (*pgcluster.Server, error) {
	return pgcluster.Ensure(ctx, pgcluster.EnsureOptions{
		Dir:           filepath.Join(dataDir, "postgres"),
		DefaultURL:    database.DefaultURL,
		PreferredPort: 55432,
		Logical:       cdc,
		Say:           say,
	})
}
