package providersim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/outflow/outflow/providersim"
)

const webhookSecret = "whsec_providersim_test"

// endpoint is a webhook endpoint that verifies every delivery the way the
// order API does (stripe-go's webhook package, the real Stripe-Signature
// check) and answers failFirst of them with a 500 first.
type endpoint struct {
	mu        sync.Mutex
	failFirst int
	attempts  int
	refused   int
	events    []stripe.Event
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ev, err := webhook.ConstructEventWithOptions(body, r.Header.Get("Stripe-Signature"), webhookSecret,
		webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true})
	e.mu.Lock()
	defer e.mu.Unlock()
	e.attempts++
	switch {
	case err != nil:
		e.refused++
		http.Error(w, err.Error(), http.StatusBadRequest)
	case e.failFirst > 0:
		e.failFirst--
		http.Error(w, "not now", http.StatusInternalServerError)
	default:
		e.events = append(e.events, ev)
		w.WriteHeader(http.StatusOK)
	}
}

func (e *endpoint) received() []stripe.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]stripe.Event(nil), e.events...)
}

// setupWebhooks is setup with a webhook endpoint.
func setupWebhooks(t *testing.T, failFirst int) (*testBundle, *endpoint) {
	t.Helper()
	ep := &endpoint{failFirst: failFirst}
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	sim := providersim.New(providersim.Options{WebhookURL: srv.URL, WebhookSecret: webhookSecret,
		WebhookRetry: 10 * time.Millisecond, WebhookAttempts: 5})
	baseURL, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		require.NoError(t, sim.Close())
		hc.CloseIdleConnections()
	})
	return &testBundle{sim: sim, baseURL: baseURL, http: hc, stripe: newStripe(baseURL, hc, testKey)}, ep
}

// waitEvents waits for n verified deliveries.
func waitEvents(t *testing.T, ep *endpoint, n int) []stripe.Event {
	t.Helper()
	require.Eventually(t, func() bool { return len(ep.received()) >= n }, 10*time.Second, 5*time.Millisecond,
		"want %d webhook deliveries", n)
	time.Sleep(50 * time.Millisecond) // and no more than n
	got := ep.received()
	require.Len(t, got, n)
	return got
}

func TestWebhooksOfEachOutcome(t *testing.T) {
	t.Parallel()
	b, ep := setupWebhooks(t, 0)
	ctx := context.Background()
	sim := &providersim.Client{BaseURL: b.baseURL}

	ok, err := b.stripe.PaymentIntents.New(chargeParams("k-ok", "evt-ok", 2500, "pm_card_visa"))
	require.NoError(t, err)
	ev := waitEvents(t, ep, 1)[0]
	require.Equal(t, providersim.EventPaymentIntentSucceeded, string(ev.Type))
	require.Equal(t, ok.ID, ev.Data.Object["id"])
	require.Equal(t, "order-evt-ok", ev.Data.Object["metadata"].(map[string]any)["order_id"], "the order is in the metadata")
	_, err = b.stripe.PaymentIntents.New(chargeParams("k-ok", "evt-ok", 2500, "pm_card_visa"))
	require.NoError(t, err)

	_, err = b.stripe.PaymentIntents.New(chargeParams("k-no", "evt-no", 2500, "pm_card_chargeDeclined"))
	stripeErr(t, err)
	ev = waitEvents(t, ep, 2)[1]
	require.Equal(t, providersim.EventPaymentIntentPaymentFailed, string(ev.Type), "an idempotent replay makes no event")
	require.Equal(t, "card_declined", ev.Data.Object["last_payment_error"].(map[string]any)["code"])

	tds, err := b.stripe.PaymentIntents.New(chargeParams("k-3ds", "evt-3ds", 2500, "pm_card_authenticationRequired"))
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusRequiresAction, tds.Status)
	require.NotNil(t, tds.NextAction)
	require.Equal(t, providersim.EventPaymentIntentRequiresAction, string(waitEvents(t, ep, 3)[2].Type))
	require.NoError(t, sim.Authenticate(ctx, tds.ID, providersim.OutcomeSucceeded))
	require.Equal(t, providersim.EventPaymentIntentSucceeded, string(waitEvents(t, ep, 4)[3].Type))
	require.Error(t, sim.Authenticate(ctx, tds.ID, providersim.OutcomeSucceeded), "authenticated already")
	got, err := b.stripe.PaymentIntents.Get(tds.ID, nil)
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, got.Status)

	tdsNo, err := b.stripe.PaymentIntents.New(chargeParams("k-3ds-no", "evt-3ds-no", 2500, "pm_card_authenticationRequired"))
	require.NoError(t, err)
	require.NoError(t, sim.Authenticate(ctx, tdsNo.ID, providersim.OutcomeFailed))
	ev = waitEvents(t, ep, 6)[5]
	require.Equal(t, providersim.EventPaymentIntentPaymentFailed, string(ev.Type))
	require.Equal(t, "payment_intent_authentication_failure", ev.Data.Object["last_payment_error"].(map[string]any)["code"])

	proc, err := b.stripe.PaymentIntents.New(chargeParams("k-proc", "evt-proc", 2500, "pm_sim_processing"))
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusProcessing, proc.Status)
	require.Equal(t, providersim.EventPaymentIntentProcessing, string(waitEvents(t, ep, 7)[6].Type))
	_, err = b.stripe.Refunds.New(refundParams("k-proc-rf", proc.ID, 0))
	stripeErr(t, err) // nothing to refund before it settles
	require.NoError(t, sim.Settle(ctx, proc.ID, providersim.OutcomeSucceeded))
	require.Equal(t, providersim.EventPaymentIntentSucceeded, string(waitEvents(t, ep, 8)[7].Type))

	rf, err := b.stripe.Refunds.New(refundParams("k-rf", ok.ID, 0))
	require.NoError(t, err)
	require.NoError(t, sim.FailRefund(ctx, rf.ID, "lost_or_stolen_card"))
	ev = waitEvents(t, ep, 9)[8]
	require.Equal(t, providersim.EventChargeRefundUpdated, string(ev.Type))
	require.Equal(t, "failed", ev.Data.Object["status"])
	require.Equal(t, "lost_or_stolen_card", ev.Data.Object["failure_reason"])
	require.Equal(t, ok.ID, ev.Data.Object["payment_intent"])
	rfAgain, err := b.stripe.Refunds.Get(rf.ID, nil)
	require.NoError(t, err)
	require.Equal(t, stripe.RefundStatusFailed, rfAgain.Status)

	dp, err := sim.Dispute(ctx, proc.ID, "")
	require.NoError(t, err)
	ev = waitEvents(t, ep, 10)[9]
	require.Equal(t, providersim.EventChargeDisputeCreated, string(ev.Type))
	require.Equal(t, dp, ev.Data.Object["id"])
	require.Equal(t, "fraudulent", ev.Data.Object["reason"])
	require.Equal(t, proc.ID, ev.Data.Object["payment_intent"])

	ep.mu.Lock()
	defer ep.mu.Unlock()
	require.Zero(t, ep.refused, "every delivery is signed the way Stripe signs")
}

func TestWebhooksRetriedUntilAnswered(t *testing.T) {
	t.Parallel()
	b, ep := setupWebhooks(t, 3)
	_, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-retry", 2500, "pm_card_visa"))
	require.NoError(t, err)
	ev := waitEvents(t, ep, 1)[0]
	require.Equal(t, providersim.EventPaymentIntentSucceeded, string(ev.Type))
	d := b.sim.Webhooks()
	require.Len(t, d, 1)
	require.True(t, d[0].Delivered)
	require.Equal(t, 4, d[0].Attempts, "three 500s, then the 2xx")
	require.Equal(t, ev.ID, d[0].EventID)

	// An endpoint that never answers 2xx: the simulator gives up after its attempts.
	ep.mu.Lock()
	ep.failFirst = 1000
	ep.mu.Unlock()
	_, err = b.stripe.PaymentIntents.New(chargeParams("", "evt-never", 2500, "pm_card_visa"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { d := b.sim.Webhooks(); return len(d) == 2 && d[1].GaveUp }, 10*time.Second, 5*time.Millisecond)
	d = b.sim.Webhooks()
	require.Equal(t, 5, d[1].Attempts)
	require.Equal(t, "HTTP 500", d[1].LastError)
	require.False(t, d[1].Delivered)
}

func TestWebhooksDuplicatedAndOutOfOrder(t *testing.T) {
	t.Parallel()
	b, ep := setupWebhooks(t, 0)
	ctx := context.Background()
	sim := &providersim.Client{BaseURL: b.baseURL}
	require.NoError(t, sim.HoldWebhooks(ctx))
	proc, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-ooo", 2500, "pm_sim_processing"))
	require.NoError(t, err)
	require.NoError(t, sim.Settle(ctx, proc.ID, providersim.OutcomeSucceeded))
	time.Sleep(50 * time.Millisecond)
	require.Empty(t, ep.received(), "held")
	require.NoError(t, sim.ReleaseWebhooks(ctx))
	evs := waitEvents(t, ep, 2)
	require.Equal(t, providersim.EventPaymentIntentSucceeded, string(evs[0].Type), "newest first")
	require.Equal(t, providersim.EventPaymentIntentProcessing, string(evs[1].Type))
	require.Greater(t, evs[0].Created, int64(0))

	require.NoError(t, sim.ResendWebhook(ctx, evs[0].ID))
	again := waitEvents(t, ep, 3)[2]
	require.Equal(t, evs[0].ID, again.ID, "a duplicate is the same event")
	first, err := json.Marshal(evs[0].Data.Object)
	require.NoError(t, err)
	second, err := json.Marshal(again.Data.Object)
	require.NoError(t, err)
	require.JSONEq(t, string(first), string(second))
	require.Error(t, sim.ResendWebhook(ctx, "evt_none"))

	list, err := sim.Webhooks(ctx)
	require.NoError(t, err)
	require.Len(t, list, 3)
}

func TestNoWebhooksWithoutAnEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-none", 2500, "pm_card_visa"))
	require.NoError(t, err)
	require.Empty(t, b.sim.Webhooks())
}
