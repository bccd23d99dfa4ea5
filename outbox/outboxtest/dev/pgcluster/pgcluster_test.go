package pgcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/pgcluster"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
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

// TestClusterOutOfThePostgresUsersReach: run as root, a cluster belongs to
// the postgres user, who cannot enter a mode-700 directory (root's home, a
// clone under it). Start refuses such a directory with a message that
// names it, instead of initdb's "Permission denied"; Ensure (make demo)
// puts the cluster where postgres can reach it, says so, and finds the same
// directory again on the next run. Not as root, nothing is in the way.
func TestClusterOutOfThePostgresUsersReach(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	private, err := os.MkdirTemp("", "outflow-private-") // mode 0700, as root's home
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(private) })
	dir := filepath.Join(private, "checkout", ".data", "postgres")

	_, err = pgcluster.Start(ctx, pgcluster.Options{Dir: dir})
	if os.Geteuid() != 0 {
		// Not root: the cluster runs as this user, who owns private.
		require.NoError(t, err)
		return
	}
	require.ErrorContains(t, err, "the postgres user, who cannot enter "+private+" (mode 0700")
	_, statErr := os.Stat(dir)
	require.True(t, os.IsNotExist(statErr), "nothing written under the unreachable directory")

	var said []string
	say := func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	unreachable := "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable"
	s, err := pgcluster.Ensure(ctx, pgcluster.EnsureOptions{Dir: dir, DefaultURL: unreachable, Say: say})
	require.NoError(t, err)
	require.NotNil(t, s.Stop)
	require.NoError(t, pgcluster.Ping(ctx, s.URL))
	require.Contains(t, strings.Join(said, "\n"), "cannot enter "+private+" (mode 0700); the throwaway cluster goes to "+os.TempDir())
	moved := strings.TrimSuffix(strings.TrimPrefix(s.How, "throwaway cluster in "), " (wal_level=logical)")
	t.Cleanup(func() { _ = os.RemoveAll(moved) })
	require.NotContains(t, moved, private)
	s.Stop()

	said = nil
	again, err := pgcluster.Ensure(ctx, pgcluster.EnsureOptions{Dir: dir, DefaultURL: unreachable, Say: say})
	require.NoError(t, err)
	t.Cleanup(again.Stop)
	require.Equal(t, s.How, again.How, "the next run finds the same cluster")
}
