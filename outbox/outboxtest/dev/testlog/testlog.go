// Package testlog holds the logging helpers of the repository's tests: a
// logger that is quiet unless OUTFLOW_TEST_LOG is set, and a buffer a test
// reads while the code under test writes its log to it.
package testlog

import (
	"bytes"
	"log/slog"
	"os"
	"sync"
)

// EnvVar, when set (to anything), makes [Logger] write to stderr at debug
// level, to see what a failing test's components said.
const EnvVar = "OUTFLOW_TEST_LOG"

// Logger discards everything, unless $OUTFLOW_TEST_LOG is set: then it
// writes text to stderr at debug level.
func Logger() *slog.Logger {
	if os.Getenv(EnvVar) != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// SyncBuffer is an io.Writer safe for concurrent use whose contents a test
// reads while another goroutine writes (a server's log).
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
