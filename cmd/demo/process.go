package main

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// startChild runs bin under outbox/outboxtest/dev/proc with env added to the demo's
// own environment, its output going to a fresh .data/logs/<name>.log. The
// child has a process group of its own: Ctrl-C in the terminal reaches the
// demo, which then stops its children in order instead of all dying at once.
func startChild(dataDir, name, bin string, args []string, env []string) (*proc.Process, error) {
	logDir := filepath.Join(dataDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	return proc.Start(proc.Options{
		Name: name, Bin: bin, Args: args, Env: append(os.Environ(), env...),
		LogPath: filepath.Join(logDir, name+".log"), Truncate: true,
	})
}

// waitLog waits up to timeout until the child's log contains marker,
// failing early if the child exits.
func waitLog(ctx context.Context, c *proc.Process, marker string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.WaitLog(ctx, marker)
}
