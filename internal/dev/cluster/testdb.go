package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// testPrefix starts the names of test clusters' databases, which carry the
// test process's pid: outflow_temporal_t<pid>_<random>[_visibility].
const testPrefix = "outflow_temporal_t"

// TestDatabase returns a main database name of this process's own for a
// test cluster (the visibility database adds "_visibility"), distinct from
// `make cluster`'s outflow_temporal and from outflow's test databases.
func TestDatabase() string {
	return fmt.Sprintf("%s%d_%s", testPrefix, os.Getpid(), strings.ReplaceAll(uuid.NewString()[:8], "-", ""))
}

// DropAbandoned drops the databases of test clusters whose process is gone
// (a test binary killed before it could drop them), and returns how many.
// A database still in use is left alone (DROP DATABASE without FORCE).
func DropAbandoned(ctx context.Context, adminURL string) (int, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	names, err := qDatabasesLike.All(ctx, conn, patternArgs{Pattern: testPrefix + "%"})
	if err != nil {
		return 0, err
	}
	dropped := 0
	for _, db := range names {
		pidStr, _, ok := strings.Cut(strings.TrimPrefix(db, testPrefix), "_")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 || alive(pid) {
			continue
		}
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()); err == nil {
			dropped++
		}
	}
	return dropped, nil
}

// alive reports whether a process with that pid exists on this machine.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
