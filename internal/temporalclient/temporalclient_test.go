package temporalclient

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/codec"
)

func TestCodecDataConverterFromTheEnvironment(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) Option {
		return WithGetenv(func(k string) string { return kv[k] })
	}
	dc, err := CodecDataConverter(env(nil))
	require.NoError(t, err)
	require.Nil(t, dc, "unset: no encryption")
	require.Equal(t, "off", CodecSummary(client.Options{}))

	spec := codec.NewKeySpec("k2") + "," + codec.NewKeySpec("k1")
	dc, err = CodecDataConverter(env(map[string]string{codec.KeysEnv: spec}))
	require.NoError(t, err)
	require.Equal(t, []string{"k2", "k1"}, dc.Keys().IDs())
	require.Equal(t, "AES-256-GCM, zlib from 4 KiB, encrypting with k2; decrypting k2, k1", CodecSummary(client.Options{DataConverter: dc}))

	file := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(file, []byte("# rotated 2026-11\n"+strings.ReplaceAll(spec, ",", "\n")+"\n"), 0o600))
	dc, err = CodecDataConverter(env(map[string]string{codec.KeysFileEnv: file, codec.CompressEnv: "false"}))
	require.NoError(t, err)
	require.True(t, dc.NoCompression())
	require.Equal(t, "k2", dc.Keys().Primary())

	_, secret, _ := strings.Cut(spec, ":")
	_, err = CodecDataConverter(env(map[string]string{codec.KeysEnv: "k1:" + secret[:10]}))
	require.ErrorContains(t, err, codec.KeysEnv)
	require.NotContains(t, err.Error(), secret[:10])
	_, err = CodecDataConverter(env(map[string]string{codec.KeysEnv: spec, codec.CompressEnv: "maybe"}))
	require.ErrorContains(t, err, codec.CompressEnv)
}

func TestTemporalAddressIsCheckedAtStart(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"localhost:7233", "127.0.0.1:7233", "[::1]:7233", "my-ns.a1b2c.tmprl.cloud:7233", "dns:///temporal.internal:7233", "unix:///run/temporal.sock"} {
		o, err := ClientOptions(WithEnviron([]string{"TEMPORAL_ADDRESS=" + ok}))
		require.NoError(t, err, ok)
		require.Equal(t, ok, o.HostPort)
	}
	for _, bad := range []string{"not a host:port:x", "localhost", ":7233", "localhost:port", "localhost:0", "localhost:70000"} {
		_, err := ClientOptions(WithEnviron([]string{"TEMPORAL_ADDRESS=" + bad}))
		var c *cli.ConfigError
		require.ErrorAs(t, err, &c, bad)
		require.ErrorContains(t, err, `TEMPORAL_ADDRESS="`+bad+`"`, bad)
		require.ErrorContains(t, err, "want host:port", bad)
	}
}
