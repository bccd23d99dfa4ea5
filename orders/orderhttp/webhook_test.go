package orderhttp

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/inbox"
	"github.com/outflow/outflow/outbox/outboxtest"
)

const testWebhookSecret = "whsec_test_outflow"

// webhookSetup serves the API with a webhook secret on its own database.
func webhookSetup(t *testing.T, secret string) testBundle {
	t.Helper()
	b := setup(t, "")
	h, err := New(Config{DB: b.pool, StripeWebhookSecret: secret, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b.server = srv
	return b
}

// stripeEvent is a Stripe event's JSON with its object.
func stripeEvent(id, typ string, object map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "created": time.Now().Unix(), "api_version": "2023-10-16",
		"data": map[string]any{"object": object},
	})
	return b
}

// deliver posts body as Stripe does, signed with secret at ts.
func (b testBundle) deliver(t *testing.T, body []byte, secret string, ts time.Time) response {
	t.Helper()
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: ts})
	return b.do(t, http.MethodPost, "/webhooks/stripe", string(body), "Content-Type", "application/json", "Stripe-Signature", signed.Header)
}

// webhookRows counts the webhook events and the inbox rows of the Stripe
// events the tests send.
func (b testBundle) webhookRows(t *testing.T) (events, recorded int) {
	t.Helper()
	events = len(outboxtest.Events(t, b.pool, outboxtest.Match{Type: orders.EventPaymentWebhookReceived}))
	ib, err := inbox.New(nil)
	require.NoError(t, err)
	for _, id := range []string{"evt_test_1", "evt_test_2", "evt_test_3", "evt_forged", "evt_stale", "evt_1"} {
		seen, err := ib.Seen(b.ctx, b.pool, orders.WebhookConsumer, orders.WebhookInboxID(id))
		require.NoError(t, err)
		if seen {
			recorded++
		}
	}
	return events, recorded
}

// TestStripeWebhook: a verified webhook about an order is recorded once, as
// its inbox row and a PaymentWebhookReceived event naming the order's
// saga, and answered 200 after the commit; its redelivery writes nothing; a
// forged or stale signature is a 400 that writes nothing.
func TestStripeWebhook(t *testing.T) {
	t.Parallel()
	b := webhookSetup(t, testWebhookSecret)
	resp := b.post(t, validBody)
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	var created orders.CreateOrderResult
	require.NoError(t, json.Unmarshal(resp.Body, &created))

	pi := map[string]any{"id": "pi_test_1", "object": "payment_intent", "status": "succeeded", "amount": 2500, "currency": "usd",
		"metadata": map[string]string{"order_id": created.OrderID.String(), "event_id": created.EventID.String()}}
	body := stripeEvent("evt_test_1", "payment_intent.succeeded", pi)
	resp = b.deliver(t, body, testWebhookSecret, time.Now())
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var ans struct {
		Received, Duplicate bool
		EventID             string `json:"event_id"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &ans))
	require.True(t, ans.Received)
	require.False(t, ans.Duplicate)
	ev := outboxtest.RequireEnqueued(t, b.pool, outboxtest.Match{Type: orders.EventPaymentWebhookReceived})
	require.Equal(t, ans.EventID, ev.ID.String())
	require.Equal(t, orders.AggregatePayment, ev.AggregateType)
	require.Equal(t, created.OrderID.String(), ev.AggregateID)
	w, err := orders.DecodePaymentWebhookReceived(ev.SchemaVersion, ev.Payload)
	require.NoError(t, err)
	require.Equal(t, orders.PaymentWebhookReceived{StripeEventID: "evt_test_1", Type: "payment_intent.succeeded", Created: w.Created,
		OrderID: created.OrderID.String(), SagaWorkflowID: created.EventID.String(), ObjectID: "pi_test_1", ObjectType: "payment_intent",
		PaymentIntentID: "pi_test_1", Status: "succeeded", Amount: 2500, Currency: "usd"}, w)
	events, inbox := b.webhookRows(t)
	require.Equal(t, [2]int{1, 1}, [2]int{events, inbox})

	t.Run("a redelivery writes nothing", func(t *testing.T) {
		resp := b.deliver(t, body, testWebhookSecret, time.Now())
		require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
		require.Contains(t, string(resp.Body), `"duplicate":true`)
		events, inbox := b.webhookRows(t)
		require.Equal(t, [2]int{1, 1}, [2]int{events, inbox})
	})

	t.Run("a charge's webhook finds its order by the PaymentIntent", func(t *testing.T) {
		_, err := b.pool.Exec(b.ctx, `UPDATE orders SET payment_intent_id = 'pi_test_1' WHERE id = $1`, created.OrderID)
		require.NoError(t, err)
		resp := b.deliver(t, stripeEvent("evt_test_2", "charge.dispute.created",
			map[string]any{"id": "dp_1", "object": "dispute", "status": "needs_response", "reason": "fraudulent", "payment_intent": "pi_test_1"}),
			testWebhookSecret, time.Now())
		require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
		got := outboxtest.Events(t, b.pool, outboxtest.Match{Type: orders.EventPaymentWebhookReceived})
		require.Len(t, got, 2)
		w, err := orders.DecodePaymentWebhookReceived(got[1].SchemaVersion, got[1].Payload)
		require.NoError(t, err)
		require.Equal(t, created.EventID.String(), w.SagaWorkflowID)
		require.Equal(t, "fraudulent", w.FailureCode)
		require.Equal(t, int64(2), got[1].Sequence, "the order's webhooks are one stream, in the order recorded")
	})

	t.Run("a webhook about no order of ours is recorded, with no event", func(t *testing.T) {
		resp := b.deliver(t, stripeEvent("evt_test_3", "payment_intent.succeeded",
			map[string]any{"id": "pi_other", "object": "payment_intent", "status": "succeeded"}), testWebhookSecret, time.Now())
		require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
		require.Contains(t, string(resp.Body), `"unmatched":true`)
		events, inbox := b.webhookRows(t)
		require.Equal(t, [2]int{2, 3}, [2]int{events, inbox})
	})

	for name, c := range map[string]struct {
		secret string
		at     time.Time
		body   []byte
		code   string
	}{
		"forged signature": {"whsec_someone_else", time.Now(), stripeEvent("evt_forged", "charge.refund.updated", pi), codeInvalidSignature},
		"stale timestamp":  {testWebhookSecret, time.Now().Add(-10 * time.Minute), stripeEvent("evt_stale", "charge.refund.updated", pi), codeInvalidSignature},
		"no event id":      {testWebhookSecret, time.Now(), []byte(`{"object":"event"}`), codeInvalidEvent},
	} {
		t.Run(name+" is refused and writes nothing", func(t *testing.T) {
			resp := b.deliver(t, c.body, c.secret, c.at)
			require.Equal(t, http.StatusBadRequest, resp.Status, "%s", resp.Body)
			require.Contains(t, string(resp.Body), fmt.Sprintf("%q", c.code))
			events, inbox := b.webhookRows(t)
			require.Equal(t, [2]int{2, 3}, [2]int{events, inbox})
		})
	}
	t.Run("no signature header is refused", func(t *testing.T) {
		resp := b.do(t, http.MethodPost, "/webhooks/stripe", string(body), "Content-Type", "application/json")
		require.Equal(t, http.StatusBadRequest, resp.Status, "%s", resp.Body)
	})
}

// TestStripeWebhookWithoutSecret: without STRIPE_WEBHOOK_SECRET the route
// takes nothing and says why, with a 503 Stripe retries.
func TestStripeWebhookWithoutSecret(t *testing.T) {
	t.Parallel()
	b := webhookSetup(t, "")
	resp := b.deliver(t, stripeEvent("evt_1", "payment_intent.succeeded", map[string]any{"id": "pi_1", "object": "payment_intent"}), "x", time.Now())
	require.Equal(t, http.StatusServiceUnavailable, resp.Status)
	require.Contains(t, string(resp.Body), "STRIPE_WEBHOOK_SECRET")
	events, inbox := b.webhookRows(t)
	require.Zero(t, events+inbox)
}

// TestLogEnqueuerTakesOrdersAndWebhooks: with Config.Enqueuer writing the
// log (as a database whose source is the log does), an order created through the
// API and its Stripe webhook write their events to the log (the order's
// lookup finds them), and nothing to outbox_events.
func TestLogEnqueuerTakesOrdersAndWebhooks(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	h, err := New(Config{DB: b.pool, StripeWebhookSecret: testWebhookSecret, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Enqueuer: outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true})})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b.server = srv

	resp := b.post(t, validBody)
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	var created orders.CreateOrderResult
	require.NoError(t, json.Unmarshal(resp.Body, &created))
	pi := map[string]any{"id": "pi_log_1", "object": "payment_intent", "status": "succeeded", "amount": 2500, "currency": "usd",
		"metadata": map[string]string{"order_id": created.OrderID.String(), "event_id": created.EventID.String()}}
	resp = b.deliver(t, stripeEvent("evt_log_1", "payment_intent.succeeded", pi), testWebhookSecret, time.Now())
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)

	var got []string
	for _, typ := range []string{orders.AggregateType, orders.AggregatePayment} {
		events, err := outbox.AggregateEvents(b.ctx, b.pool, typ, created.OrderID.String())
		require.NoError(t, err)
		for _, e := range events {
			got = append(got, typ+":"+e.Type)
		}
	}
	require.Equal(t, []string{orders.AggregateType + ":" + orders.EventOrderCreated, orders.AggregatePayment + ":" + orders.EventPaymentWebhookReceived}, got)
	require.Empty(t, outboxtest.Events(t, b.pool, outboxtest.Match{}), "nothing in outbox_events")
}
