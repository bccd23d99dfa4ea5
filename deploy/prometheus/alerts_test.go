// Package prometheus holds outflow's Prometheus scrape configuration and
// alert rules; its test runs promtool's config and rule checkers and the
// rules' unit tests (*-alerts_test.yml). It is part of the deploy module
// (deploy/go.mod), which `make test` runs.
package prometheus

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// promtool finds the promtool that `make promtool` (and `make test`) builds
// from tools/promtool, or the one OUTFLOW_PROMTOOL names.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("OUTFLOW_PROMTOOL"); p != "" {
		return p
	}
	p, err := filepath.Abs("../../bin/promtool")
	require.NoError(t, err)
	_, err = os.Stat(p)
	require.NoError(t, err, "promtool is missing: run `make promtool` (it builds bin/promtool from tools/promtool), or set OUTFLOW_PROMTOOL to a promtool")
	return p
}

// TestAlertRules checks the scrape configuration (which loads the rules) and
// the rules' syntax, and runs each rule file's unit tests: every alert fires
// on a synthetic series and resolves when it recovers. The outbox's rules
// are tested alone, as a service embedding the outbox loads them.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	// --syntax-only: the files the configuration names exist only in the
	// Prometheus container (the order API's token, /run/secrets); the rule
	// file it loads is checked next.
	out, err := exec.Command(bin, "check", "config", "--syntax-only", "prometheus.yml").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, rules := range []string{"outbox-alerts", "orders-alerts"} {
		out, err = exec.Command(bin, "check", "rules", rules+".yml").CombinedOutput()
		require.NoError(t, err, "%s", out)
		out, err = exec.Command(bin, "test", "rules", rules+"_test.yml").CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "SUCCESS")
	}
}
