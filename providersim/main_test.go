package providersim_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"
	"go.uber.org/goleak"

	"github.com/outflow/outflow/internal/dev/testclock"
	"github.com/outflow/outflow/providersim"
)

// TestMain fails the package if a test leaves a goroutine behind: the
// simulator holds connections open on purpose (timeout_after_commit,
// latency), and those must end with the client or with Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testKey is a Stripe test-mode key; the simulator accepts any sk_test_ key.
const testKey = "sk_test_providersim"

type testBundle struct {
	sim     *providersim.Simulator
	baseURL string
	clock   *testclock.Clock // crosses the 24-hour idempotency-key lifetime without waiting
	http    *http.Client
	stripe  *client.API
}

// setup starts a simulator on an ephemeral port with a fake clock, and a
// real stripe-go client pointed at it with retries off, so each test sees
// every response the simulator sends.
func setup(t *testing.T) *testBundle {
	t.Helper()
	clock := testclock.New(time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC))
	sim := providersim.New(providersim.Options{Now: clock.Now})
	baseURL, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		require.NoError(t, sim.Close())
		hc.CloseIdleConnections()
	})
	return &testBundle{sim: sim, baseURL: baseURL, clock: clock, http: hc, stripe: newStripe(baseURL, hc, testKey)}
}

// newStripe is how the activities build their client: stripe-go v76 with a
// custom backend URL.
func newStripe(baseURL string, hc *http.Client, key string) *client.API {
	backend := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:               stripe.String(baseURL),
		HTTPClient:        hc,
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	api := &client.API{}
	api.Init(key, &stripe.Backends{API: backend, Connect: backend, Uploads: backend})
	return api
}

// chargeParams are the parameters of a typical outflow charge.
func chargeParams(key, eventID string, amount int64, pm string) *stripe.PaymentIntentParams {
	p := &stripe.PaymentIntentParams{
		Amount:             stripe.Int64(amount),
		Currency:           stripe.String(string(stripe.CurrencyUSD)),
		PaymentMethod:      stripe.String(pm),
		PaymentMethodTypes: stripe.StringSlice([]string{"card"}),
		Confirm:            stripe.Bool(true),
	}
	p.AddMetadata("event_id", eventID)
	p.AddMetadata("order_id", "order-"+eventID)
	if key != "" {
		p.SetIdempotencyKey(key)
	}
	return p
}

// stripeErr asserts err is a Stripe API error and returns it.
func stripeErr(t *testing.T, err error) *stripe.Error {
	t.Helper()
	require.Error(t, err)
	var se *stripe.Error
	require.ErrorAs(t, err, &se, "want a *stripe.Error, got %T: %v", err, err)
	return se
}

// rawResponse is an HTTP answer read in full.
type rawResponse struct {
	status int
	header http.Header
	body   string
}

// do sends one raw HTTP request, for what stripe-go hides (auth failures,
// headers) and for the email API, which has no Go client in this module.
func (b *testBundle) do(t *testing.T, ctx context.Context, method, path, body string, header map[string]string) rawResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, b.baseURL+path, bytes.NewBufferString(body))
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: strings.TrimSpace(string(out))}
}

// waitForFaultsTaken waits until every queued fault has been consumed, which
// for a latency fault means the call holds its idempotency key in flight.
func waitForFaultsTaken(t *testing.T, sim *providersim.Simulator) {
	t.Helper()
	require.Eventually(t, func() bool { return len(sim.Faults()) == 0 }, 10*time.Second, 5*time.Millisecond,
		"the call never took its fault")
}
