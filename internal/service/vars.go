package service

import (
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/failpoints"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/codec"
)

// The environment variables several binaries read, as their -h lists them
// (package cli). A binary's own variables sit beside its main.

// DatabaseVar is DATABASE_URL, with the default of package database.
func DatabaseVar(defaultURL, meaning string) cli.Var {
	return cli.Var{Name: "DATABASE_URL", Default: defaultURL, Meaning: "PostgreSQL, pgx/v5 syntax: " + meaning}
}

// TemporalVars are the Temporal client's variables ([TemporalClientOptions],
// loaded with go.temporal.io/sdk/contrib/envconfig).
func TemporalVars() []cli.Var {
	return []cli.Var{
		{Name: "TEMPORAL_ADDRESS", Default: client.DefaultHostPort, Meaning: "the Temporal frontend, host:port"},
		{Name: "TEMPORAL_NAMESPACE", Default: client.DefaultNamespace, Meaning: "the Temporal namespace"},
		{Name: "TEMPORAL_API_KEY", Meaning: "API key (Temporal Cloud); turns TLS on"},
		{Name: "TEMPORAL_TLS, TEMPORAL_TLS_*", Meaning: "TLS: client cert and key, server CA and name (paths or data)"},
		{Name: "TEMPORAL_GRPC_META_*", Meaning: "gRPC headers sent with every call"},
		{Name: "TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE", Meaning: "the SDK's config file and profile, which the variables above override"},
	}
}

// CodecVars are the payload codec's variables ([CodecDataConverter]).
func CodecVars() []cli.Var {
	return []cli.Var{
		{Name: codec.KeysEnv, Default: "no encryption", Meaning: "payload encryption keys: comma-separated KEY_ID:BASE64_32_BYTES, the first encrypts, all decrypt"},
		{Name: codec.KeysFileEnv, Meaning: "a file holding those keys instead, one a line"},
		{Name: codec.CompressEnv, Default: "true", Meaning: "false turns zlib before encryption off"},
	}
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
