package providersim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76"

	"github.com/outflow/outflow/providersim"
)

func TestStripeAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	body := "amount=2500&currency=usd&payment_method=pm_card_visa&confirm=true"

	resp := b.do(t, ctx, http.MethodPost, "/v1/payment_intents", body, form)
	require.Equal(t, http.StatusUnauthorized, resp.status)
	require.Contains(t, resp.body, "You did not provide an API key")

	live := map[string]string{"Content-Type": form["Content-Type"], "Authorization": "Bearer sk_live_0123456789abcdef"}
	resp = b.do(t, ctx, http.MethodPost, "/v1/payment_intents", body, live)
	require.Equal(t, http.StatusUnauthorized, resp.status, "live keys are refused")
	require.NotContains(t, resp.body, "0123456789abcdef", "the key is redacted")

	// Basic auth with the key as user name, as curl -u sk_test_...: sends it.
	req, err := http.NewRequest(http.MethodPost, b.baseURL+"/v1/payment_intents", nil)
	require.NoError(t, err)
	req.SetBasicAuth(testKey, "")
	basic := map[string]string{"Content-Type": form["Content-Type"], "Authorization": req.Header.Get("Authorization")}
	resp = b.do(t, ctx, http.MethodPost, "/v1/payment_intents", body, basic)
	require.Equal(t, http.StatusOK, resp.status, resp.body)
	require.Contains(t, resp.body, `"status": "succeeded"`)

	require.Len(t, b.sim.Ledger().PaymentIntents, 1)
}

func TestUnknownStripeRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.stripe.Customers.New(&stripe.CustomerParams{Email: stripe.String("a@b.c")})
	se := stripeErr(t, err)
	require.Equal(t, http.StatusNotFound, se.HTTPStatusCode)
	require.Contains(t, se.Msg, "Unrecognized request URL (POST: /v1/customers)")
}

func TestLedgerJSONMatchesTheContract(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pi, err := b.stripe.PaymentIntents.New(chargeParams("k1", "evt-l", 2500, "pm_card_visa"))
	require.NoError(t, err)
	_, err = b.stripe.Refunds.New(refundParams("k2", pi.ID, 500))
	require.NoError(t, err)
	emailID(t, b.sendEmail(t, "k3", emailBody("order-l", "confirmation")))

	resp := b.do(t, context.Background(), http.MethodGet, "/_sim/ledger", "", nil)
	require.Equal(t, http.StatusOK, resp.status)
	var raw map[string][]map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp.body), &raw))
	keys := func(m map[string]any) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		return out
	}
	require.ElementsMatch(t, []string{"id", "amount", "currency", "status", "idempotency_key", "metadata", "created"}, keys(raw["payment_intents"][0]))
	require.ElementsMatch(t, []string{"id", "payment_intent", "amount", "status", "idempotency_key"}, keys(raw["refunds"][0]))
	require.ElementsMatch(t, []string{"id", "to", "subject", "tags", "idempotency_key"}, keys(raw["emails"][0]))

	c := &providersim.Client{BaseURL: b.baseURL, HTTP: b.http}
	overHTTP, err := c.Ledger(context.Background())
	require.NoError(t, err)
	require.Equal(t, b.sim.Ledger(), overHTTP)
}

func TestEmptyLedgerHasEmptyLists(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp := b.do(t, context.Background(), http.MethodGet, "/_sim/ledger", "", nil)
	require.JSONEq(t, `{"payment_intents": [], "refunds": [], "emails": []}`, resp.body)
}

func TestReset(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.stripe.PaymentIntents.New(chargeParams("k", "evt-reset", 2500, "pm_card_visa"))
	require.NoError(t, err)
	require.NoError(t, b.sim.InjectFault(providersim.Fault{Operation: providersim.OperationEmailsSend, Fault: "error_500"}))

	c := &providersim.Client{BaseURL: b.baseURL, HTTP: b.http}
	require.NoError(t, c.Reset(context.Background()))
	require.Equal(t, providersim.Ledger{
		PaymentIntents: []providersim.LedgerPaymentIntent{}, Refunds: []providersim.LedgerRefund{}, Emails: []providersim.LedgerEmail{},
	}, b.sim.Ledger())
	require.Empty(t, b.sim.Faults())

	pi, err := b.stripe.PaymentIntents.New(chargeParams("k", "evt-reset", 2500, "pm_card_visa"))
	require.NoError(t, err)
	require.Empty(t, pi.LastResponse.Header.Get("Idempotent-Replayed"), "keys are forgotten too")
}

func TestHandlerServesWithoutStart(t *testing.T) {
	t.Parallel()
	sim := providersim.New(providersim.Options{})
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	defer sim.Close()
	hc := srv.Client()
	defer hc.CloseIdleConnections()

	pi, err := newStripe(srv.URL, hc, testKey).PaymentIntents.New(chargeParams("", "evt-h", 2500, "pm_card_visa"))
	require.NoError(t, err)
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, pi.Status)
}

func TestStartTwiceFails(t *testing.T) {
	t.Parallel()
	sim := providersim.New(providersim.Options{})
	defer sim.Close()
	_, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	_, err = sim.Start("127.0.0.1:0")
	require.Error(t, err)
}
