package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76/webhook"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/providersim"
)

// TestWebhookAfterTheSagaClosed runs the real binaries: a Stripe webhook
// about an order whose saga has long confirmed it (a dispute) is verified
// and recorded by the order API, relayed as a signal to the closed saga,
// and, since it closed, taken by a PaymentWebhookLateWorkflow instead: the
// event is published, none is quarantined, and the webhook's history is
// there for an operator. Its redelivery writes nothing, and neither do
// forgeries of it (a wrong or missing Stripe-Signature), which are 400s.
func TestWebhookAfterTheSagaClosed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const secret = "whsec_testsuite"
	s, order, o := confirmedOrder(ctx, t, secret, "webhook-")

	body := disputeWebhook(t, "evt_dispute_"+order.OrderID[:8], *o.PaymentIntentID)
	deliver := func() string { return postWebhook(ctx, t, s, secret, body) }
	// Forgeries: a signature made with another secret, the real signature
	// over another body (the dispute moved to a payment intent of the
	// forger's), and none at all. Each is refused with a 400 and writes
	// nothing: no inbox row, no event.
	forged := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_forger"})
	tampered := bytes.Replace(body, []byte(*o.PaymentIntentID), []byte("pi_forged"), 1)
	genuine := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret})
	for _, f := range []struct {
		name, header string
		body         []byte
	}{
		{"another secret", forged.Header, body},
		{"another body", genuine.Header, tampered},
		{"no signature", "", body},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.APIAddr+"/webhooks/stripe", bytes.NewReader(f.body))
		require.NoError(t, err)
		if f.header != "" {
			req.Header.Set("Stripe-Signature", f.header)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", f.name, b)
		require.Contains(t, string(b), `"invalid_signature"`, f.name)
	}
	wh, err := qWebhookFacts.One(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
	require.Equal(t, webhookFacts{}, wh, "a forged webhook writes no inbox row and no event")

	require.Contains(t, deliver(), `"duplicate":false`)
	require.Contains(t, deliver(), `"duplicate":true`, "Stripe's redelivery")

	events := outboxtest.WaitFor(t, s.Pool, outboxtest.Match{Type: orders.EventPaymentWebhookReceived}, time.Minute,
		func(es []outboxtest.Event) bool {
			return len(es) == 1 && (es[0].PublishedAt != nil || es[0].QuarantinedAt != nil)
		},
		"the webhook's event is relayed")
	require.Nil(t, events[0].QuarantinedAt, "a webhook for a closed saga is not quarantined: %s", events[0].LastError)
	var result orders.PaymentWebhookReceived
	require.NoError(t, s.Env.Client.GetWorkflow(ctx, events[0].ID.String(), "").Get(ctx, &result),
		"the late webhook's workflow, ID = the event's, completes")
	require.Equal(t, order.OrderID, result.OrderID)
	require.Equal(t, order.EventID, result.SagaWorkflowID)
	require.Equal(t, "charge.dispute.created", result.Type)
	late, err := s.Env.Client.DescribeWorkflow(ctx, events[0].ID.String(), "")
	require.NoError(t, err)
	info := late.RawResponse.GetWorkflowExecutionInfo()
	require.Equal(t, handoff.PaymentWebhookLateWorkflowName, info.GetType().GetName())
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, info.GetStatus())
}

// postWebhook sends body to s's order API as Stripe does, signed with
// secret, and returns the answer's body, which must be a 200.
func postWebhook(ctx context.Context, t *testing.T, s *Stack, secret string, body []byte) string {
	t.Helper()
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+s.APIAddr+"/webhooks/stripe", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Stripe-Signature", signed.Header)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	return string(b)
}

// disputeWebhook is the body of a Stripe charge.dispute.created event about
// the PaymentIntent pi.
func disputeWebhook(t *testing.T, eventID, pi string) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{"id": eventID, "object": "event", "type": "charge.dispute.created",
		"created": time.Now().Unix(), "data": map[string]any{"object": map[string]any{
			"id": "dp_1", "object": "dispute", "status": "needs_response", "reason": "fraudulent", "payment_intent": pi}}})
	require.NoError(t, err)
	return body
}

// TestDisputeAfterTheSagaWasForgotten runs the real binaries: a dispute
// arrives after Temporal forgot the order's saga (the namespace retention
// deleted the closed run; the test deletes it as the retention does). It is
// handled as one whose saga closed within the retention: the relay starts
// no saga under the saga's ID (a run from an empty input would fail at
// once, and the event would count as delivered), and the webhook's
// PaymentWebhookLateWorkflow marks the order disputed. A redelivery of the
// event by the relay starts nothing more.
func TestDisputeAfterTheSagaWasForgotten(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const secret = "whsec_testsuite"
	s, order, o := confirmedOrder(ctx, t, secret, "forgotten-dispute-")
	forgetWorkflow(ctx, t, s.Env, order.EventID)

	require.Contains(t, postWebhook(ctx, t, s, secret, disputeWebhook(t, "evt_dispute_"+order.OrderID[:8], *o.PaymentIntentID)), `"duplicate":false`)
	events := outboxtest.WaitFor(t, s.Pool, outboxtest.Match{Type: orders.EventPaymentWebhookReceived}, time.Minute,
		func(es []outboxtest.Event) bool {
			return len(es) == 1 && (es[0].PublishedAt != nil || es[0].QuarantinedAt != nil)
		},
		"the webhook's event is relayed")
	require.Nil(t, events[0].QuarantinedAt, "a webhook for a forgotten saga is not quarantined: %s", events[0].LastError)
	_, err := s.Env.Client.DescribeWorkflow(ctx, order.EventID, "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "no saga run under the forgotten saga's ID (a late webhook must not start one from an empty input)")

	var result orders.PaymentWebhookReceived
	require.NoError(t, s.Env.Client.GetWorkflow(ctx, events[0].ID.String(), "").Get(ctx, &result),
		"the late webhook's workflow, ID = the event's, completes")
	require.Equal(t, "charge.dispute.created", result.Type)
	late, err := s.Env.Client.DescribeWorkflow(ctx, events[0].ID.String(), "")
	require.NoError(t, err)
	info := late.RawResponse.GetWorkflowExecutionInfo()
	require.Equal(t, handoff.PaymentWebhookLateWorkflowName, info.GetType().GetName())
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, info.GetStatus())
	o, err = orders.GetOrder(ctx, s.Pool, uuid.MustParse(order.OrderID))
	require.NoError(t, err)
	require.NotNil(t, o.DisputedAt, "the order is marked disputed")
	require.NotNil(t, o.DisputeID)
	require.Equal(t, "dp_1", *o.DisputeID)
	require.Equal(t, orders.Status("confirmed"), o.Status, "the dispute does not change the order's status")

	// The relay delivers the event again (its mark lost): the late
	// workflow's start is an absorbed duplicate, and still no saga runs.
	_, err = qLoseMark.Exec(ctx, s.Pool, eventIDArgs{EventID: events[0].ID.String()})
	require.NoError(t, err)
	_, err = qNotify.Exec(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
	waitPublished(ctx, t, s, events[0].ID.String())
	again, err := s.Env.Client.DescribeWorkflow(ctx, events[0].ID.String(), "")
	require.NoError(t, err)
	require.Equal(t, late.WorkflowExecution.RunID, again.WorkflowExecution.RunID, "one late run")
	_, err = s.Env.Client.DescribeWorkflow(ctx, order.EventID, "")
	require.ErrorAs(t, err, &notFound, "the redelivery started no saga either")
}

// startWebhookStack starts a simulator of t's own that sends Stripe
// webhooks, signed, to s's order API, then s's order API (with the
// webhooks' secret and apiFailpoints, "" for none), starter and worker, the
// worker charging and emailing through that simulator. It returns a client
// of the simulator.
func startWebhookStack(ctx context.Context, t *testing.T, s *Stack, apiFailpoints string) *providersim.Client {
	t.Helper()
	const secret = "whsec_testsuite_sim"
	port, err := ports.Free()
	require.NoError(t, err)
	simURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	name := "providersim-webhooks-" + strings.ReplaceAll(t.Name(), "/", "_")
	simProc, err := startProcess(name, s.Env.Bin.ProviderSim, filepath.Join(s.Env.Dir, name+".log"),
		[]string{fmt.Sprintf("PROVIDERSIM_ADDR=127.0.0.1:%d", port), "PROVIDERSIM_WEBHOOK_URL=http://" + s.APIAddr + "/webhooks/stripe",
			"STRIPE_WEBHOOK_SECRET=" + secret})
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("---- last lines of %s ----\n%s", name, simProc.LogTail(40))
		}
		simProc.Stop(5 * time.Second)
	})
	require.NoError(t, simProc.WaitLog(ctx, "listening"))

	s.OrderAPIEnv = []string{"STRIPE_WEBHOOK_SECRET=" + secret}
	s.WorkerEnv = []string{"STRIPE_API_BASE=" + simURL, "EMAIL_API_BASE=" + simURL}
	s.Start("orderapi", apiFailpoints)
	s.Start("starter", "")
	s.Start("worker", "")
	return &providersim.Client{BaseURL: simURL}
}

// TestProcessingPaymentConfirmedByItsWebhook runs the real binaries and a
// simulator of its own that sends Stripe webhooks to this stack's order API:
// a payment the provider leaves processing is confirmed by its
// payment_intent.succeeded webhook, signed by the simulator and verified by
// the order API, recorded once though the simulator delivers it twice and
// out of order with the processing one, and relayed to the waiting saga;
// the order changes once (the invariants hold against the simulator's
// ledger).
func TestProcessingPaymentConfirmedByItsWebhook(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := NewStack(t)
	sim := startWebhookStack(ctx, t, s, "")

	require.NoError(t, sim.HoldWebhooks(ctx))
	order, err := s.API().Create(ctx, "processing-"+uuid.NewString(), "pm_sim_processing")
	require.NoError(t, err)
	var piID string
	require.Eventually(t, func() bool {
		l, err := sim.Ledger(ctx)
		if err != nil {
			return false
		}
		for _, pi := range l.PaymentIntents {
			if pi.Metadata["order_id"] == order.OrderID {
				piID = pi.ID
			}
		}
		return piID != ""
	}, 2*time.Minute, 200*time.Millisecond, "the charge reaches the simulator")
	require.NoError(t, sim.Settle(ctx, piID, providersim.OutcomeSucceeded))
	require.NoError(t, sim.ReleaseWebhooks(ctx)) // succeeded first, then processing
	hooks, err := sim.Webhooks(ctx)
	require.NoError(t, err)
	require.Len(t, hooks, 2)
	require.NoError(t, sim.ResendWebhook(ctx, hooks[1].EventID), "Stripe's duplicate of the succeeded event")

	require.NoError(t, WaitStatus(ctx, s, order.OrderID, "confirmed", 2*time.Minute))
	require.Eventually(t, func() bool {
		hooks, err = sim.Webhooks(ctx)
		if err != nil || len(hooks) != 3 {
			return false
		}
		for _, h := range hooks {
			if !h.Delivered {
				return false
			}
		}
		return true
	}, time.Minute, 200*time.Millisecond, "every delivery answered 2xx")
	events := outboxtest.WaitFor(t, s.Pool, outboxtest.Match{Type: orders.EventPaymentWebhookReceived}, time.Minute,
		func(es []outboxtest.Event) bool { return len(es) == 2 }, "one event per Stripe event, the duplicate recorded once")
	for _, e := range events {
		require.Nil(t, e.QuarantinedAt, "%s", e.LastError)
	}
	wh, err := qWebhookFacts.One(ctx, s.Pool, namedsql.NoArgs{})
	require.NoError(t, err)
	require.Equal(t, int64(2), wh.InboxRows, "three deliveries of two Stripe events: one inbox row each")
	// The older processing event, delivered after the succeeded one and
	// after its duplicate, changed the order no more: it stays confirmed
	// with one charge, one confirmation email and a gap-free sequence.
	rep := assertRecoveredOn(ctx, t, s, sim)
	require.Equal(t, 1, rep.Confirmed)
	l, err := sim.Ledger(ctx)
	require.NoError(t, err)
	charged := 0
	for _, pi := range l.PaymentIntents {
		if pi.Metadata["order_id"] == order.OrderID {
			charged++
			require.Equal(t, "succeeded", pi.Status)
		}
	}
	require.Equal(t, 1, charged, "one charge")
	o, err := orders.GetOrder(ctx, s.Pool, uuid.MustParse(order.OrderID))
	require.NoError(t, err)
	require.NotNil(t, o.PaymentIntentID)
	require.Equal(t, piID, *o.PaymentIntentID)
	workerLog, err := os.ReadFile(filepath.Join(s.Env.Dir, t.Name()+"-worker.log"))
	require.NoError(t, err)
	require.Contains(t, string(workerLog), "the processing charge succeeded (webhook)", "the webhook settled it, not reconciliation")

	// A dispute after the saga closed: the simulator's webhook reaches the
	// late-webhook workflow, which tells an operator.
	_, err = sim.Dispute(ctx, piID, "fraudulent")
	require.NoError(t, err)
	events = outboxtest.WaitFor(t, s.Pool, outboxtest.Match{Type: orders.EventPaymentWebhookReceived}, time.Minute,
		func(es []outboxtest.Event) bool { return len(es) == 3 && es[2].PublishedAt != nil }, "the dispute's webhook is relayed")
	var late orders.PaymentWebhookReceived
	require.NoError(t, s.Env.Client.GetWorkflow(ctx, events[2].ID.String(), "").Get(ctx, &late))
	require.Equal(t, "charge.dispute.created", late.Type)
	require.Equal(t, piID, late.PaymentIntentID)
	require.Equal(t, "fraudulent", late.FailureCode)
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(s.Env.Dir, t.Name()+"-worker.log"))
		return err == nil && strings.Contains(string(b), "OPERATOR: a dispute was opened")
	}, 30*time.Second, 200*time.Millisecond, "an operator is told")
	rep = assertRecoveredOn(ctx, t, s, sim)
	require.Equal(t, 3, rep.Webhooks, "the dispute's webhook recorded once")
	require.Equal(t, 1, rep.Confirmed, "the dispute does not change the order")
}

// confirmedOrder starts the order API (taking Stripe webhooks signed with
// secret), a starter and a worker, and places an order (its idempotency
// key prefixed) that the saga confirms: the stack, the order and its row.
func confirmedOrder(ctx context.Context, t *testing.T, secret, prefix string) (*Stack, CreateResponse, orders.Order) {
	t.Helper()
	s := NewStack(t)
	s.OrderAPIEnv = []string{"STRIPE_WEBHOOK_SECRET=" + secret}
	s.Start("orderapi", "")
	s.Start("starter", "")
	s.Start("worker", "")
	order, err := s.API().Create(ctx, prefix+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, order.OrderID, "confirmed", 2*time.Minute))
	o, err := orders.GetOrder(ctx, s.Pool, uuid.MustParse(order.OrderID))
	require.NoError(t, err)
	require.NotNil(t, o.PaymentIntentID)
	return s, order, o
}
