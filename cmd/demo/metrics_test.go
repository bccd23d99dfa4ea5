package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPrometheusConfigOfTheDemo: the configuration the demo writes is one
// promtool accepts, with the repository's alert rules loaded and a job per
// process.
func TestPrometheusConfigOfTheDemo(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	promtool := filepath.Join(root, "bin", "promtool")
	_, err = os.Stat(promtool)
	require.NoError(t, err, "run `make promtool`")
	path, err := writePrometheusConfig(t.TempDir(), root, map[string]string{
		"starter": "127.0.0.1:9102", "worker": "127.0.0.1:9103", "orderapi": "127.0.0.1:8080",
	})
	require.NoError(t, err)
	out, err := exec.Command(promtool, "check", "config", path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "SUCCESS: 1 rule files found")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, job := range []string{"outflow-starter", "outflow-worker", "outflow-orderapi"} {
		require.Contains(t, string(b), "job_name: "+job)
	}
}
