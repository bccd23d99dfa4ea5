package testsuite

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/failpoints"
	"github.com/outflow/outflow/providersim"
)

// TestSagaEndToEnd runs the real binaries over the mix of orders the saga
// must get right: success, decline, an unknown charge outcome (the provider
// commits the charge and never answers), a cancel racing the charge, a late
// cancel, and a worker killed right after the provider accepted a charge.
// Every order must reach its final state with one succeeded charge per paid
// order, one refund per cancelled paid order, one email per kind, and no
// effect stored twice under one key.
//
// It runs alone (not parallel): it injects a fault into the shared
// simulator, which must hit this test's charge and no other.
func TestSagaEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := NewStack(t)
	s.Start("orderapi", "")
	s.Start("starter", "")
	worker := s.Start("worker", failpoints.ActivityPaymentAfterProvider+"=crash")
	api := s.API()
	sim := s.Env.SimClient()

	// The worker dies right after the provider accepted the first charge.
	killed, err := api.Create(ctx, "e2e-killed-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, worker.WaitKilled(ctx))
	s.Start("worker", "")

	// The next charge commits at the provider and its answer is lost.
	require.NoError(t, sim.InjectFault(ctx, providersim.Fault{Operation: "payment_intents.create", Fault: "timeout_after_commit", Count: 1}))
	unknown, err := api.Create(ctx, "e2e-unknown-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, waitFaultsConsumed(ctx, sim))

	_, err = api.Create(ctx, "e2e-ok-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	_, err = api.Create(ctx, "e2e-declined-"+uuid.NewString(), "pm_card_chargeDeclined")
	require.NoError(t, err)
	racing, err := api.Create(ctx, "e2e-racing-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, api.Cancel(ctx, racing.OrderID))
	late, err := api.Create(ctx, "e2e-late-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, late.OrderID, "confirmed", 2*time.Minute))
	require.NoError(t, api.Cancel(ctx, late.OrderID))

	assertRecovered(ctx, t, s)
	for _, id := range []string{killed.OrderID, unknown.OrderID} {
		require.NoError(t, WaitStatus(ctx, s, id, "confirmed", time.Second))
	}
	require.NoError(t, WaitStatus(ctx, s, racing.OrderID, "cancelled", time.Second))
	require.NoError(t, WaitStatus(ctx, s, late.OrderID, "cancelled", time.Second))
}

// waitFaultsConsumed waits until the simulator has handed out every queued
// fault (a fault is taken in the same step as the call's key is reserved).
func waitFaultsConsumed(ctx context.Context, sim *providersim.Client) error {
	for {
		faults, err := sim.Faults(ctx)
		if err == nil && len(faults) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
