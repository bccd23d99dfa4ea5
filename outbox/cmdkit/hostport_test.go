package cmdkit

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckHostPort(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"localhost:7233", "127.0.0.1:7233", "[::1]:7233", "my-ns.a1b2c.tmprl.cloud:7233", "dns:///temporal.internal:7233", "unix:///run/temporal.sock"} {
		require.NoError(t, CheckHostPort(ok), ok)
	}
	for bad, why := range map[string]string{
		"not a host:port:x": "too many colons", "localhost": "missing port", ":7233": "no host",
		"localhost:port": `port "port"`, "localhost:0": `port "0"`, "localhost:70000": `port "70000"`,
	} {
		err := CheckHostPort(bad)
		require.ErrorContains(t, err, "want host:port: ", bad)
		require.ErrorContains(t, err, why, bad)
	}
}
