package service

import (
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/outbox/failpoints"
)

// The environment variables several binaries read, as their -h lists them
// (package cli). A binary's own variables sit beside its main.

// DatabaseVar is DATABASE_URL, with the default of package database.
func DatabaseVar(defaultURL, meaning string) cli.Var {
	return cli.Var{Name: "DATABASE_URL", Default: defaultURL, Meaning: "PostgreSQL, pgx/v5 syntax: " + meaning}
}

// TaskQueueVar is [TaskQueueEnv].
func TaskQueueVar(meaning string) cli.Var {
	return cli.Var{Name: TaskQueueEnv, Default: handoff.DefaultTaskQueue, Meaning: meaning}
}

// MetricsVar is [MetricsAddrEnv].
func MetricsVar() cli.Var {
	return cli.Var{Name: MetricsAddrEnv, Default: "off", Meaning: "serve Prometheus /metrics on this host:port"}
}

// FailpointsVar is failpoints.EnvVar.
func FailpointsVar() cli.Var {
	return cli.Var{Name: failpoints.EnvVar, Default: "none", Meaning: `fault injection for tests, e.g. "relay.after_publish=crash" (package failpoints)`}
}

// LogVars are the logger's variables ([NewLogger]).
func LogVars() []cli.Var {
	return []cli.Var{
		{Name: LogLevelEnv, Default: LogLevelDefault, Meaning: "debug, info, warn or error"},
		{Name: LogFormatEnv, Default: LogFormatDefault, Meaning: "text or json (on stderr)"},
	}
}
