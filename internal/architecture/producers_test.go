package architecture

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
)

// producers are the directories of code that writes events: the order
// app, its API and webhooks, the inventory service and the embedding
// example. None of them may know the relay's source: it is recorded in the
// database, where outbox.Enqueue reads it.
var producers = []string{"orders", "cmd/orderapi", "cmd/inventory", "embedtest"}

// TestNoProducerReadsTheRelaySource: no file of a producer, code, test or
// comment, names OUTFLOW_RELAY_SOURCE (only the starter, where it is
// deprecated, and the dev harnesses do).
func TestNoProducerReadsTheRelaySource(t *testing.T) {
	root, err := checkout.Root()
	require.NoError(t, err)
	var found []string
	for _, dir := range producers {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), "OUTFLOW_RELAY_SOURCE") {
				rel, _ := filepath.Rel(root, path)
				found = append(found, rel)
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.Empty(t, found, "producers that name OUTFLOW_RELAY_SOURCE: the source is the database's (outboxctl source set), never a producer's")
}
