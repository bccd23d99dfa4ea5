package outbox_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
)

func TestConfigDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	require.NoError(t, outbox.RelayConfig{}.ValidateForTest())
	// A short lease defaults the publish timeout below it.
	require.NoError(t, outbox.RelayConfig{Lease: 2 * time.Second}.ValidateForTest())

	bad := map[string]outbox.RelayConfig{
		"publish timeout over half the lease": {Lease: 5 * time.Second, PublishTimeout: 3 * time.Second},
		"negative batch":                      {BatchSize: -1},
		"huge batch":                          {BatchSize: 10001},
		"tiny lease":                          {Lease: time.Millisecond},
		"retry max below base":                {RetryBase: time.Minute, RetryMax: time.Second},
		"negative attempts":                   {MaxAttempts: -3},
		"tiny poll":                           {PollInterval: time.Millisecond},
	}
	for name, cfg := range bad {
		err := cfg.ValidateForTest()
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "outbox: RelayConfig.", name)
	}
}

// TestConfigDefaultsAreTheConstants: the zero RelayConfig gets the exported
// defaults, so documentation and code that quote them say what NewRelay does.
func TestConfigDefaultsAreTheConstants(t *testing.T) {
	t.Parallel()
	cfg, err := outbox.RelayConfig{}.WithDefaultsForTest()
	require.NoError(t, err)
	require.NotEmpty(t, cfg.Owner)
	require.Equal(t, outbox.BatchSizeDefault, cfg.BatchSize)
	require.Equal(t, outbox.LeaseDefault, cfg.Lease)
	require.Equal(t, outbox.PublishTimeoutDefault, cfg.PublishTimeout)
	require.Equal(t, outbox.MaxInFlightDefault, cfg.MaxInFlight)
	require.Equal(t, outbox.PollIntervalDefault, cfg.PollInterval)
	require.Equal(t, outbox.MaxAttemptsDefault, cfg.MaxAttempts)
	require.Equal(t, outbox.RetryBaseDefault, cfg.RetryBase)
	require.Equal(t, outbox.RetryMaxDefault, cfg.RetryMax)
	require.Equal(t, outbox.MarkDelayDefault, cfg.MarkDelay)
	require.Equal(t, outbox.BacklogMarkDelayDefault, cfg.BacklogMarkDelay)
	require.Equal(t, outbox.MarkBatchSizeDefault, cfg.MarkBatchSize)
	require.Equal(t, outbox.GaugeIntervalDefault, cfg.GaugeInterval)
	require.Same(t, slog.Default(), cfg.Logger)

	// The publish timeout follows a short lease.
	cfg, err = outbox.RelayConfig{Lease: 2 * time.Second}.WithDefaultsForTest()
	require.NoError(t, err)
	require.Equal(t, time.Second, cfg.PublishTimeout)

	// Set fields are kept.
	cfg, err = outbox.RelayConfig{Owner: "me", BatchSize: 7, MarkDelay: time.Second}.WithDefaultsForTest()
	require.NoError(t, err)
	require.Equal(t, "me", cfg.Owner)
	require.Equal(t, 7, cfg.BatchSize)
	require.Equal(t, time.Second, cfg.MarkDelay)
	// The backlog's delay is never below MarkDelay unless asked for, and then refused.
	require.Equal(t, time.Second, cfg.BacklogMarkDelay)
	require.ErrorContains(t, outbox.RelayConfig{MarkDelay: time.Second, BacklogMarkDelay: time.Millisecond}.ValidateForTest(), "BacklogMarkDelay")
}
