package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76/webhook"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/outboxtest"
)

// TestWebhookAfterTheSagaClosed runs the real binaries: a Stripe webhook
// about an order whose saga has long confirmed it (a dispute) is verified
// and recorded by the order API, relayed as a signal to the closed saga,
// and, since it closed, taken by a PaymentWebhookLateWorkflow instead: the
// event is published, none is quarantined, and the webhook's history is
// there for an operator. Its redelivery writes nothing.
func TestWebhookAfterTheSagaClosed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := NewStack(t)
	const secret = "whsec_testsuite"
	s.OrderAPIEnv = []string{"STRIPE_WEBHOOK_SECRET=" + secret}
	s.Start("orderapi", "")
	s.Start("starter", "")
	s.Start("worker", "")

	order, err := s.API().Create(ctx, "webhook-"+uuid.NewString(), "pm_card_visa")
	require.NoError(t, err)
	require.NoError(t, WaitStatus(ctx, s, order.OrderID, "confirmed", 2*time.Minute))
	o, err := orders.GetOrder(ctx, s.Pool, uuid.MustParse(order.OrderID))
	require.NoError(t, err)
	require.NotNil(t, o.PaymentIntentID)

	body, err := json.Marshal(map[string]any{"id": "evt_dispute_" + order.OrderID[:8], "object": "event", "type": "charge.dispute.created",
		"created": time.Now().Unix(), "data": map[string]any{"object": map[string]any{
			"id": "dp_1", "object": "dispute", "status": "needs_response", "reason": "fraudulent", "payment_intent": *o.PaymentIntentID}}})
	require.NoError(t, err)
	deliver := func() string {
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
