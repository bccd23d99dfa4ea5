package providersim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/providersim"
)

// TestClockAdvanceExpiresKeys: POST /_sim/clock moves the simulator's time,
// so a test run against the binary can show what happens after the 24-hour
// key lifetime: the same key and body are a second email.
func TestClockAdvanceExpiresKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := &providersim.Client{BaseURL: b.baseURL}
	first := emailID(t, b.sendEmail(t, "evt-clock:email:confirmation", emailBody("order-c", "confirmation")))
	require.Equal(t, first, emailID(t, b.sendEmail(t, "evt-clock:email:confirmation", emailBody("order-c", "confirmation"))), "within the lifetime: a replay")

	before := b.clock.Now()
	now, err := c.Advance(context.Background(), 25*time.Hour)
	require.NoError(t, err)
	require.Equal(t, before.Add(25*time.Hour), now)

	second := emailID(t, b.sendEmail(t, "evt-clock:email:confirmation", emailBody("order-c", "confirmation")))
	require.NotEqual(t, first, second, "after 24 hours the provider has forgotten the key")

	_, err = c.Advance(context.Background(), -time.Hour)
	require.ErrorContains(t, err, "only moves forward")
}
