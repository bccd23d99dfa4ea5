package testsuite

import (
	"strings"

	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// startProcess runs bin under outbox/outboxtest/dev/proc with env on top of a minimal
// inherited environment ([baseEnv]), its output appended to logPath, which
// the test prints when it fails.
func startProcess(name, bin, logPath string, env []string, args ...string) (*proc.Process, error) {
	return proc.Start(proc.Options{
		Name: name, Bin: bin, Args: args, Env: append(baseEnv(), env...), LogPath: logPath,
	})
}

// baseEnv keeps PATH and HOME-like variables and drops anything that could
// point a child at the wrong database or server.
func baseEnv() []string {
	return proc.Environ(func(k string) bool {
		switch {
		case k == "DATABASE_URL", strings.HasPrefix(k, "TEMPORAL_"), strings.HasPrefix(k, "OUTFLOW_"),
			strings.HasPrefix(k, "STRIPE_"), strings.HasPrefix(k, "EMAIL_"), strings.HasPrefix(k, "OTEL_"), k == "METRICS_ADDR",
			k == "ORDERAPI_ADDR", k == "ORDERAPI_TOKEN", k == "PROVIDERSIM_ADDR":
			return true
		}
		return false
	})
}
