package testsuite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/providersim"
)

// TestThreeDSecure runs the real binaries and a simulator of its own that
// sends signed webhooks to this stack's order API. A 3-D Secure charge the
// customer completes is confirmed by its payment_intent.succeeded webhook;
// one nobody completes is canceled at the provider when the worker's
// PAYMENT_AUTHENTICATION_TIMEOUT passes, and its order fails without a
// charge. No webhook event is quarantined, the late payment_intent.canceled
// included.
func TestThreeDSecure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := NewStack(t)
	const secret = "whsec_testsuite_3ds"
	port, err := ports.Free()
	require.NoError(t, err)
	simURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	simProc, err := startProcess("providersim-3ds", s.Env.Bin.ProviderSim, filepath.Join(s.Env.Dir, "providersim-3ds.log"),
		[]string{fmt.Sprintf("PROVIDERSIM_ADDR=127.0.0.1:%d", port), "PROVIDERSIM_WEBHOOK_URL=http://" + s.APIAddr + "/webhooks/stripe",
			"STRIPE_WEBHOOK_SECRET=" + secret})
	require.NoError(t, err)
	t.Cleanup(func() { simProc.Stop(5 * time.Second) })
	require.NoError(t, simProc.WaitLog(ctx, "listening"))
	sim := &providersim.Client{BaseURL: simURL}

	const authTimeout = 20 * time.Second
	s.OrderAPIEnv = []string{"STRIPE_WEBHOOK_SECRET=" + secret}
	s.WorkerEnv = []string{"STRIPE_API_BASE=" + simURL, "EMAIL_API_BASE=" + simURL, "PAYMENT_AUTHENTICATION_TIMEOUT=" + authTimeout.String()}
	s.Start("orderapi", "")
	s.Start("starter", "")
	s.Start("worker", "")

	paymentIntentOf := func(orderID string) providersim.LedgerPaymentIntent {
		var found providersim.LedgerPaymentIntent
		require.Eventually(t, func() bool {
			l, err := sim.Ledger(ctx)
			if err != nil {
				return false
			}
			n := 0
			for _, pi := range l.PaymentIntents {
				if pi.Metadata["order_id"] == orderID {
					found = pi
					n++
				}
			}
			require.LessOrEqual(t, n, 1, "one PaymentIntent per order")
			return n == 1
		}, 2*time.Minute, 200*time.Millisecond, "the charge reaches the simulator")
		return found
	}

	completed, err := s.API().Create(ctx, "3ds-ok-"+uuid.NewString(), "pm_card_authenticationRequired")
	require.NoError(t, err)
	abandoned, err := s.API().Create(ctx, "3ds-gone-"+uuid.NewString(), "pm_card_threeDSecure2Required")
	require.NoError(t, err)
	startedAt := time.Now()

	ok := paymentIntentOf(completed.OrderID)
	require.Equal(t, "requires_action", ok.Status)
	require.NoError(t, sim.Authenticate(ctx, ok.ID, providersim.OutcomeSucceeded))
	require.NoError(t, WaitStatus(ctx, s, completed.OrderID, "confirmed", 2*time.Minute))
	o, err := orders.GetOrder(ctx, s.Pool, uuid.MustParse(completed.OrderID))
	require.NoError(t, err)
	require.NotNil(t, o.PaymentIntentID)
	require.Equal(t, ok.ID, *o.PaymentIntentID)

	require.NoError(t, WaitStatus(ctx, s, abandoned.OrderID, "payment_failed", 2*time.Minute))
	require.GreaterOrEqual(t, time.Since(startedAt), authTimeout, "not before the deadline")
	gone := paymentIntentOf(abandoned.OrderID)
	require.Equal(t, "canceled", gone.Status, "canceled at the provider")
	require.Error(t, sim.Authenticate(ctx, gone.ID, providersim.OutcomeSucceeded), "too late for the customer")
	l, err := sim.Ledger(ctx)
	require.NoError(t, err)
	for _, pi := range l.PaymentIntents {
		if pi.ID == ok.ID {
			require.Equal(t, "succeeded", pi.Status)
		}
	}

	// requires_action ×2, succeeded, canceled: every webhook recorded and
	// relayed, to the waiting saga or, once it closed, the late-webhook
	// workflow; none quarantined.
	events := outboxtest.WaitFor(t, s.Pool, outboxtest.Match{Type: orders.EventPaymentWebhookReceived}, time.Minute,
		func(es []outboxtest.Event) bool {
			if len(es) != 4 {
				return false
			}
			for _, e := range es {
				if e.PublishedAt == nil && e.QuarantinedAt == nil {
					return false
				}
			}
			return true
		}, "the four webhooks are relayed")
	for _, e := range events {
		require.Nil(t, e.QuarantinedAt, "%s", e.LastError)
	}
}
