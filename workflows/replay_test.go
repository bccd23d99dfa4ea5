package workflows

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// Every saved history (testdata/*.json, recorded from real runs by
// TestSagaOnDevServer with OUTFLOW_RECORD_HISTORIES=1) must replay against
// today's workflow code. A failure here means a change is not deterministic
// for workflows already running: guard it with workflow.GetVersion, or
// re-record only if no such workflow can exist in production.
func TestReplayHistories(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no saved histories: run OUTFLOW_RECORD_HISTORIES=1 go test -run TestSagaOnDevServer ./workflows/")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			replayer := worker.NewWorkflowReplayer()
			Register(replayer)
			logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
			require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(logger, file))
		})
	}
}
