package testsuite

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/outbox/failpoints"
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
	sagaEndToEnd(ctx, t, NewStack(t))
}

// TestSagaEndToEndOnAUsedDatabase starts from the database an earlier run
// with another master key left behind (its orders, events, inbox rows, and
// the customer's key wrapped by that master key). A relay or worker given
// only a new key cannot unwrap the customer's key, so it must refuse to
// start and say why, rather than start and fail every publish of that
// customer's orders; the same holds for a new key under the old one's id
// (a second clone's demo key). With the old key kept after the new one (a
// rotation) the whole saga runs as on an empty database.
//
// It runs alone, as TestSagaEndToEnd does.
func TestSagaEndToEndOnAUsedDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	s := NewStack(t)
	earlier := codec.NewKeySpec("earlier-1")
	require.NoError(t, s.LeaveEarlierRun(ctx, earlier))

	later := codec.NewKeySpec("later-1")
	for keys, says := range map[string]string{
		later:                         "which OUTFLOW_CODEC_KEYS does not hold",
		codec.NewKeySpec("earlier-1"): "of OUTFLOW_CODEC_KEYS is not the key of that id that wrapped",
	} {
		s.CodecKeys = keys
		for _, name := range []string{"starter", "worker"} {
			out, err := s.StartRefused(ctx, name, time.Minute)
			require.NoError(t, err, "a %s whose keys cannot unwrap the database's customer keys must refuse to start", name)
			require.Contains(t, out, says, "%s says why", name)
			require.Contains(t, out, "earlier-1", "%s names the key", name)
		}
	}

	s.CodecKeys = later + "," + earlier
	sagaEndToEnd(ctx, t, s)
}

func sagaEndToEnd(ctx context.Context, t *testing.T, s *Stack) {
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
