package activities

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Without any provider the worker refuses to start and says how to get one.
func TestConfigRefusesWithoutProviders(t *testing.T) {
	t.Parallel()
	_, err := New(Config{})
	require.ErrorContains(t, err, "STRIPE_API_BASE")
	require.ErrorContains(t, err, "providersim")
	require.ErrorContains(t, err, "EMAIL_API_BASE")
}

// A simulator URL alone is enough: placeholder test keys are filled in.
func TestConfigSimulatorDefaults(t *testing.T) {
	t.Parallel()
	c := Config{StripeAPIBase: "http://127.0.0.1:12111", EmailAPIBase: "http://127.0.0.1:12111"}
	c.setDefaults()
	require.NoError(t, c.validate())
	require.Equal(t, simulatorKey, c.StripeAPIKey)
	require.Equal(t, simulatorEmailKey, c.EmailAPIKey)
}
