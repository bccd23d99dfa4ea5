package testlog

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSyncBufferKeepsConcurrentWrites(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&b, "w%d-%d\n", i, j)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 800, strings.Count(b.String(), "\n"))
	require.Contains(t, b.String(), "w7-99\n")
}

func TestLoggerIsQuietUnlessAsked(t *testing.T) {
	t.Setenv(EnvVar, "")
	require.False(t, Logger().Enabled(t.Context(), -8), "quiet by default")
	t.Setenv(EnvVar, "1")
	require.True(t, Logger().Enabled(t.Context(), -4), "debug when OUTFLOW_TEST_LOG is set")
}
