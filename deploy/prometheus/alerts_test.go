// Package prometheus holds outflow's Prometheus scrape configuration and
// alert rules; its test runs promtool's config and rule checkers and the
// rules' unit tests (*-alerts_test.yml). It is part of the deploy module
// (deploy/go.mod), which `make test` runs.
package prometheus

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
)

// TestAlertRules checks the scrape configuration (which loads the rules) and
// the rules' syntax, and runs each rule file's unit tests: every alert fires
// on a synthetic series and resolves when it recovers. The outbox's rules
// are tested alone, as a service embedding the outbox loads them.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	bin := promtest.Promtool(t)
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
