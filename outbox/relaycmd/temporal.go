package relaycmd

import (
	"fmt"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/outflow/outflow/outbox/cmdkit"
)

// TemporalOptions loads the Temporal client's options the SDK's way
// (go.temporal.io/sdk/contrib/envconfig) from getenv and environ (KEY=VALUE,
// as os.Environ; may be nil, then TEMPORAL_GRPC_META_* is not read): the
// default profile of the config file, overridden by TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_* and the other
// TEMPORAL_* variables. An unset address means localhost:7233, an unset
// namespace "default"; an address that is not host:port (or a gRPC target
// with a scheme) is an error, returned before anything dials.
func TemporalOptions(getenv func(string) string, environ []string) (client.Options, error) {
	o, err := envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{EnvLookup: lookup{getenv, environ}})
	if err != nil {
		return client.Options{}, fmt.Errorf("loading the Temporal client options from TEMPORAL_* and the config file (TEMPORAL_CONFIG_FILE): %w", err)
	}
	if o.HostPort == "" {
		o.HostPort = client.DefaultHostPort
	}
	if err := cmdkit.CheckHostPort(o.HostPort); err != nil {
		return client.Options{}, fmt.Errorf("TEMPORAL_ADDRESS=%q (or the address of the Temporal config file's profile; e.g. %s): %w", o.HostPort, client.DefaultHostPort, err)
	}
	if o.Namespace == "" {
		o.Namespace = client.DefaultNamespace
	}
	return o, nil
}

// lookup is envconfig.EnvLookup over getenv and environ.
type lookup struct {
	getenv  func(string) string
	environ []string
}

func (l lookup) Environ() []string { return l.environ }

func (l lookup) LookupEnv(key string) (string, bool) {
	v := l.getenv(key)
	return v, v != ""
}
