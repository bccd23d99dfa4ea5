package relaycmd

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
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
	if err := checkHostPort(o.HostPort); err != nil {
		return client.Options{}, err
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

// checkHostPort refuses an address the client would accept and then never
// reach (it dials lazily): "host:port", or a gRPC target with a scheme
// (dns:///host:port, unix:///path) passed through as it is.
func checkHostPort(hostPort string) error {
	if strings.Contains(hostPort, "://") || strings.HasPrefix(hostPort, "unix:") {
		return nil
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err == nil && host == "" {
		err = errors.New("no host")
	}
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 1 || n > 65535 {
			err = fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
	}
	if err != nil {
		return fmt.Errorf("TEMPORAL_ADDRESS=%q (or the address of the Temporal config file's profile): want host:port, e.g. %s: %v", hostPort, client.DefaultHostPort, err)
	}
	return nil
}
