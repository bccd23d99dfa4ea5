package hostcheck

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAllowed(t *testing.T) {
	t.Parallel()
	hosts := append(Loopback("8099"), "console.internal")
	for host, want := range map[string]bool{
		"127.0.0.1:8099":         true,
		"LOCALHOST.:8099":        true,
		"[::1]:8099":             true,
		"127.0.0.1:8100":         false,
		"console.internal":       true,
		"console.internal:443":   true,
		"evil.example:8099":      false,
		"127.0.0.1.evil.example": false,
		"":                       false,
	} {
		require.Equal(t, want, Allowed(host, hosts), "Host %q", host)
	}
	require.True(t, Allowed("localhost:1234", Loopback("")))
}
