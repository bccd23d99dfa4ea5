package testdb

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/pgcluster"
)

// The shared server keeps wal_level=replica, so tests of logical decoding
// (the CDC relay source) run on a private server of this process: started
// on first use by [Logical], stopped by [StopLogical] in TestMain.
var (
	logicalMu      sync.Mutex
	logicalCluster *pgcluster.Cluster
	logicalDir     string
)

// Logical returns the admin URL of this process's private PostgreSQL server
// with wal_level=logical, starting it on first use (a second or two).
// Packages that call it stop it in TestMain with [StopLogical].
func Logical(t testing.TB) string {
	t.Helper()
	logicalMu.Lock()
	defer logicalMu.Unlock()
	if logicalCluster == nil {
		c, dir, err := StartCluster(pgcluster.Options{})
		if err != nil {
			t.Fatalf("testdb: start a wal_level=logical server: %v", err)
		}
		logicalCluster, logicalDir = c, dir
	}
	return logicalCluster.URL
}

// NewLogical is [New] on the [Logical] server.
func NewLogical(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	url := NewURLOn(t, Logical(t))
	return Open(t, url), url
}

// StopLogical stops the [Logical] server if this process started one.
func StopLogical() {
	logicalMu.Lock()
	defer logicalMu.Unlock()
	if logicalCluster != nil {
		logicalCluster.Stop()
		_ = os.RemoveAll(logicalDir)
		logicalCluster = nil
	}
}

// StartCluster starts a throwaway server in a new temporary directory that
// the postgres user can reach (a test running as root hands the cluster to
// it). The caller stops it and removes the directory.
func StartCluster(o pgcluster.Options) (*pgcluster.Cluster, string, error) {
	dir, err := os.MkdirTemp("", "outflow-pg-")
	if err != nil {
		return nil, "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, "", err
	}
	o.Dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgcluster.Start(ctx, o)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", err
	}
	return c, dir, nil
}

// dropSlots drops the replication slots of database name, ending the
// sessions that still stream them.
func dropSlots(ctx context.Context, conn *pgx.Conn, name string) error {
	for {
		var active int
		err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(active_pid)) FROM pg_replication_slots WHERE database = $1 AND active`, name).Scan(&active)
		if err != nil {
			return err
		}
		if active == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slots of %s stay active: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	_, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1 AND NOT active", name)
	return err
}
