package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
)

// TestPrometheusConfigOfTheDemo: the configuration the demo writes is one
// promtool accepts, with the repository's alert rules loaded and a job per
// process, the relays' jobs marked outbox_relay="true".
func TestPrometheusConfigOfTheDemo(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	promtool := promtest.Promtool(t)
	path, err := writePrometheusConfig(t.TempDir(), root, map[string]string{
		"starter": "127.0.0.1:9102", "worker": "127.0.0.1:9103", "orderapi": "127.0.0.1:8080", "inventory": "127.0.0.1:9104",
	})
	require.NoError(t, err)
	out, err := exec.Command(promtool, "check", "config", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "SUCCESS: 2 rule files found")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	jobs := map[string]string{} // job name -> its scrape config's text
	for _, c := range strings.Split(string(b), "  - job_name: ")[1:] {
		name, _, _ := strings.Cut(c, "\n")
		jobs[name] = c
	}
	for job, relay := range map[string]bool{"outflow-starter": true, "outflow-worker": false, "outflow-orderapi": false, "outflow-inventory": true} {
		require.Contains(t, jobs, job)
		require.Equal(t, relay, strings.Contains(jobs[job], `outbox_relay: "true"`), "%s is marked as a relay's job: %v", job, relay)
	}
}
