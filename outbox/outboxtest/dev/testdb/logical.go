package testdb

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/outboxtest/dev/pgcluster"
)

// The shared server keeps wal_level=replica, so tests of logical decoding
// (the CDC relay source) run on a private server of this process: started
// on first use by [Logical], stopped by [StopLogical] in TestMain.
var (
	logicalMu      sync.Mutex
	logicalCluster *pgcluster.Cluster
)

// Logical returns the admin URL of this process's private PostgreSQL server
// with wal_level=logical, starting it on first use (a second or two).
// Packages that call it stop it in TestMain with [StopLogical].
func Logical(t testing.TB) string {
	t.Helper()
	logicalMu.Lock()
	defer logicalMu.Unlock()
	if logicalCluster == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c, err := pgcluster.StartTemp(ctx, pgcluster.Options{})
		if err != nil {
			t.Fatalf("testdb: start a wal_level=logical server: %v", err)
		}
		logicalCluster = c
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
		logicalCluster.Discard()
		logicalCluster = nil
	}
}

// dropSlots drops the replication slots of database name, ending the
// sessions that still stream them.
func dropSlots(ctx context.Context, conn *pgx.Conn, name string) error {
	for {
		active, err := qTerminateSlotSessions.Value(ctx, conn, databaseArgs{Name: name})
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
	_, err := qDropIdleSlots.Exec(ctx, conn, databaseArgs{Name: name})
	return err
}
