package pgcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/pgcluster"
	"github.com/outflow/outflow/internal/testdb"
)

// TestStartRestartStop: a throwaway cluster runs with wal_level=logical by
// default and survives a restart with its settings.
func TestStartRestartStop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgcluster.StartTemp(ctx, pgcluster.Options{MaxReplicationSlots: 4})
	require.NoError(t, err)
	t.Cleanup(c.Discard)
	level, err := pgcluster.WALLevel(ctx, c.URL)
	require.NoError(t, err)
	require.Equal(t, "logical", level)
	require.NoError(t, c.Restart(ctx))
	level, err = pgcluster.WALLevel(ctx, c.URL)
	require.NoError(t, err)
	require.Equal(t, "logical", level, "the restart keeps the settings")
}

// TestEnsurePassesOverAServerWithoutLogicalWAL: for the cdc source a reused
// server with wal_level=replica (the shared test server) is passed over for
// a throwaway cluster, and the reason is said; for poll it is reused.
func TestEnsurePassesOverAServerWithoutLogicalWAL(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	level, err := pgcluster.WALLevel(ctx, testdb.AdminURL())
	require.NoError(t, err)
	if level == "logical" {
		t.Skip("the shared test server already has wal_level=logical")
	}
	base, err := os.MkdirTemp("", "outflow-ensure-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(base, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	var said []string
	say := func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }

	reused, err := pgcluster.Ensure(ctx, pgcluster.EnsureOptions{Dir: filepath.Join(base, "pg"), DefaultURL: testdb.AdminURL(), Say: say})
	require.NoError(t, err)
	require.Nil(t, reused.Stop, "poll reuses the server")

	s, err := pgcluster.Ensure(ctx, pgcluster.EnsureOptions{Dir: filepath.Join(base, "pg"), DefaultURL: testdb.AdminURL(), Logical: true, Say: say})
	require.NoError(t, err)
	require.NotNil(t, s.Stop, "cdc starts its own cluster")
	t.Cleanup(s.Stop)
	require.Len(t, said, 1)
	require.Contains(t, said[0], "wal_level="+level)
	require.Contains(t, said[0], "wal_level=logical")
	level, err = pgcluster.WALLevel(ctx, s.URL)
	require.NoError(t, err)
	require.Equal(t, "logical", level)
}
