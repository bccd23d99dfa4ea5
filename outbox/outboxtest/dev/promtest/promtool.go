package promtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
)

// Promtool returns the promtool a test checks Prometheus's configuration and
// rules with: the one OUTFLOW_PROMTOOL names (make test sets it), else the
// checkout's bin/promtool, which `make promtool` builds from tools/promtool.
func Promtool(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("OUTFLOW_PROMTOOL"); p != "" {
		return p
	}
	root, err := checkout.Root()
	require.NoError(t, err)
	p := filepath.Join(root, "bin", "promtool")
	_, err = os.Stat(p)
	require.NoError(t, err, "promtool is missing: run `make promtool` (it builds bin/promtool from tools/promtool), or set OUTFLOW_PROMTOOL to a promtool")
	return p
}
