// Package prometheus holds outflow's Prometheus alert rules; its test runs
// promtool's rule checker and unit tests against them.
package prometheus

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// promtool finds the promtool that `make` builds from tools/promtool.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("OUTFLOW_PROMTOOL"); p != "" {
		return p
	}
	p, err := filepath.Abs("../../bin/promtool")
	require.NoError(t, err)
	_, err = os.Stat(p)
	require.NoError(t, err, "promtool is missing: run `make bin/promtool` (it builds from tools/promtool)")
	return p
}

// TestAlertRules checks the rules' syntax and runs alerts_test.yml: every
// alert fires on a synthetic series and resolves when it recovers.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	out, err := exec.Command(bin, "check", "rules", "alerts.yml").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin, "test", "rules", "alerts_test.yml").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "SUCCESS")
}
