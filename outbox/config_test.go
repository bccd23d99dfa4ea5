package outbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
)

func TestConfigDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	require.NoError(t, outbox.Config{}.ValidateForTest())
	// A short lease defaults the publish timeout below it.
	require.NoError(t, outbox.Config{Lease: 2 * time.Second}.ValidateForTest())

	bad := map[string]outbox.Config{
		"publish timeout over half the lease": {Lease: 5 * time.Second, PublishTimeout: 3 * time.Second},
		"negative batch":                      {BatchSize: -1},
		"tiny lease":                          {Lease: time.Millisecond},
		"retry max below base":                {RetryBase: time.Minute, RetryMax: time.Second},
		"negative attempts":                   {MaxAttempts: -3},
		"tiny poll":                           {PollInterval: time.Millisecond},
	}
	for name, cfg := range bad {
		err := cfg.ValidateForTest()
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "outbox: Config.", name)
	}
}
