package providersim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/providersim"
)

// resendKey is a Resend-style API key; the simulator accepts any re_ key.
const resendKey = "re_providersim"

// emailBody is the body outflow's SendEmail activity sends for an order.
func emailBody(orderID, kind string) io.Reader {
	return strings.NewReader(fmt.Sprintf(`{
		"from": "Outflow <orders@outflow.test>",
		"to": ["buyer@example.com"],
		"subject": "Your order %[1]s: %[2]s",
		"html": "<p>Order %[1]s</p>",
		"tags": [{"name": "order_id", "value": %[1]q}, {"name": "kind", "value": %[2]q}]
	}`, orderID, kind))
}

// sendEmail posts a body to /emails with an idempotency key.
func (b *testBundle) sendEmail(t *testing.T, key string, body io.Reader) rawResponse {
	t.Helper()
	raw, err := io.ReadAll(body)
	require.NoError(t, err)
	h := map[string]string{"Authorization": "Bearer " + resendKey, "Content-Type": "application/json"}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	return b.do(t, context.Background(), http.MethodPost, "/emails", string(raw), h)
}

func emailID(t *testing.T, resp rawResponse) string {
	t.Helper()
	require.Equal(t, http.StatusOK, resp.status, resp.body)
	var out struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.body), &out))
	require.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, out.ID)
	return out.ID
}

func TestEmailSendAndReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)

	first := b.sendEmail(t, "evt-1:email:confirmation", emailBody("order-1", "confirmation"))
	id := emailID(t, first)
	require.Empty(t, first.header.Get("Idempotent-Replayed"))

	replay := b.sendEmail(t, "evt-1:email:confirmation", emailBody("order-1", "confirmation"))
	require.Equal(t, id, emailID(t, replay))
	require.Equal(t, first.body, replay.body)
	require.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))

	l := b.sim.Ledger()
	require.Len(t, l.Emails, 1)
	require.Equal(t, providersim.LedgerEmail{
		ID:             id,
		To:             []string{"buyer@example.com"},
		Subject:        "Your order order-1: confirmation",
		Tags:           map[string]string{"order_id": "order-1", "kind": "confirmation"},
		IdempotencyKey: "evt-1:email:confirmation",
	}, l.Emails[0])
}

func TestEmailKeyReuseWithAnotherBody(t *testing.T) {
	t.Parallel()
	b := setup(t)

	emailID(t, b.sendEmail(t, "evt-2:email", emailBody("order-2", "confirmation")))
	resp := b.sendEmail(t, "evt-2:email", emailBody("order-2", "payment_failed"))
	require.Equal(t, http.StatusConflict, resp.status)
	require.JSONEq(t, `{"statusCode": 409, "name": "invalid_idempotent_request",
		"message": "Same idempotency key used with a different request payload. Change your idempotency key or payload."}`, resp.body)
	require.Len(t, b.sim.Ledger().Emails, 1)
}

func TestEmailSameBodyReencoded(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// Key order and spacing do not make another request.
	a := `{"from":"a@outflow.test","to":"buyer@example.com","subject":"s","text":"t"}`
	c := `{ "text": "t", "subject": "s", "to": "buyer@example.com", "from": "a@outflow.test" }`
	id := emailID(t, b.sendEmail(t, "k", strings.NewReader(a)))
	require.Equal(t, id, emailID(t, b.sendEmail(t, "k", strings.NewReader(c))))
	require.Equal(t, []string{"buyer@example.com"}, b.sim.Ledger().Emails[0].To, "a single string recipient")
}

func TestEmailKeyInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.sim.InjectFault(providersim.Fault{Operation: providersim.OperationEmailsSend, Fault: "latency:1m"}))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.baseURL+"/emails", emailBody("order-3", "cancellation"))
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+resendKey)
			req.Header.Set("Idempotency-Key", "evt-3:email")
			var resp *http.Response
			if resp, err = b.http.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		done <- err
	}()
	waitForFaultsTaken(t, b.sim)

	resp := b.sendEmail(t, "evt-3:email", emailBody("order-3", "cancellation"))
	require.Equal(t, http.StatusConflict, resp.status)
	require.Contains(t, resp.body, `"concurrent_idempotent_requests"`)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the held email request did not end")
	}
	require.Empty(t, b.sim.Ledger().Emails)
}

func TestEmailValidationAndAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	resp := b.do(t, ctx, http.MethodPost, "/emails", `{}`, nil)
	require.Equal(t, http.StatusUnauthorized, resp.status)
	require.Contains(t, resp.body, `"missing_api_key"`)
	resp = b.do(t, ctx, http.MethodPost, "/emails", `{}`, map[string]string{"Authorization": "Bearer sk_test_wrong_api"})
	require.Equal(t, http.StatusForbidden, resp.status)

	for body, want := range map[string]string{
		`{"to":"a@b.c","subject":"s","text":"t"}`:                                                         "Missing `from` field.",
		`{"from":"a@b.c","subject":"s","text":"t"}`:                                                       "Missing `to` field.",
		`{"from":"a@b.c","to":["a@b.c"],"text":"t"}`:                                                      "Missing `subject` field.",
		`{"from":"a@b.c","to":"a@b.c","subject":"s"}`:                                                     "Missing `html` or `text` field.",
		`{"from":"a@b.c","to":"a@b.c","subject":"s","text":"t","tags":[{"name":"order id","value":"1"}]}`: "Tags should only contain",
		`not json`: "Invalid JSON body",
	} {
		resp := b.sendEmail(t, "", strings.NewReader(body))
		require.Equal(t, http.StatusUnprocessableEntity, resp.status, body)
		require.Contains(t, resp.body, want, body)
	}
	require.Empty(t, b.sim.Ledger().Emails)
}
