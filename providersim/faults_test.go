package providersim_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76"

	"github.com/outflow/outflow/providersim"
)

func TestTimeoutAfterCommit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.sim.InjectFault(providersim.Fault{
		Operation: providersim.OperationPaymentIntentsCreate, Fault: "timeout_after_commit", Count: 1,
	}))

	// The caller gives up: its outcome is unknown.
	impatient := newStripe(b.baseURL, &http.Client{Transport: b.http.Transport, Timeout: 300 * time.Millisecond}, testKey)
	_, err := impatient.PaymentIntents.New(chargeParams("evt-t:charge", "evt-t", 2500, "pm_card_visa"))
	require.Error(t, err)
	var se *stripe.Error
	require.False(t, errors.As(err, &se), "no answer at all, not a Stripe error: %v", err)

	// Yet the charge happened (committed before the answer was withheld;
	// waited for only in case this machine is slower than the timeout).
	require.Eventually(t, func() bool { return len(b.sim.Ledger().PaymentIntents) == 1 }, 10*time.Second, 5*time.Millisecond)
	committed := b.sim.Ledger().PaymentIntents[0]
	require.Equal(t, "succeeded", committed.Status)
	require.Equal(t, "evt-t:charge", committed.IdempotencyKey)

	// Reconciliation, first way: the same key within its lifetime replays
	// the committed charge instead of charging again.
	pi, err := b.stripe.PaymentIntents.New(chargeParams("evt-t:charge", "evt-t", 2500, "pm_card_visa"))
	require.NoError(t, err)
	require.Equal(t, committed.ID, pi.ID)
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, pi.Status)
	require.Equal(t, "true", pi.LastResponse.Header.Get("Idempotent-Replayed"))

	// Second way: search by the event id in the metadata.
	require.Equal(t, []string{committed.ID}, search(t, b, "metadata['event_id']:'evt-t'", 0))
	require.Len(t, b.sim.Ledger().PaymentIntents, 1, "still one charge")
}

func TestTimeoutAfterCommitOfAnEmail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.sim.InjectFault(providersim.Fault{Operation: providersim.OperationEmailsSend, Fault: "timeout_after_commit"}))

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.baseURL+"/emails", emailBody("evt-e", "confirmation"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+resendKey)
	req.Header.Set("Idempotency-Key", "evt-e:email:confirmation")
	_, err = b.http.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	require.Eventually(t, func() bool { return len(b.sim.Ledger().Emails) == 1 }, 10*time.Second, 5*time.Millisecond)
	emails := b.sim.Ledger().Emails
	resp := b.sendEmail(t, "evt-e:email:confirmation", emailBody("evt-e", "confirmation"))
	require.Equal(t, http.StatusOK, resp.status)
	require.JSONEq(t, `{"id": "`+emails[0].ID+`"}`, resp.body)
	require.Len(t, b.sim.Ledger().Emails, 1)
}

func TestError500CommitsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.sim.InjectFault(providersim.Fault{
		Operation: providersim.OperationPaymentIntentsCreate, Fault: "error_500", Count: 1,
	}))

	_, err := b.stripe.PaymentIntents.New(chargeParams("evt-5:charge", "evt-5", 2500, "pm_card_visa"))
	se := stripeErr(t, err)
	require.Equal(t, http.StatusInternalServerError, se.HTTPStatusCode)
	require.Equal(t, stripe.ErrorTypeAPI, se.Type)
	var apiErr *stripe.APIError
	require.True(t, errors.As(err, &apiErr))
	require.Empty(t, b.sim.Ledger().PaymentIntents)

	pi, err := b.stripe.PaymentIntents.New(chargeParams("evt-5:charge", "evt-5", 2500, "pm_card_visa"))
	require.NoError(t, err, "the key was not stored: the retry executes")
	require.Empty(t, pi.LastResponse.Header.Get("Idempotent-Replayed"))
	l := b.sim.Ledger()
	require.Len(t, l.PaymentIntents, 1)
	require.Equal(t, pi.ID, l.PaymentIntents[0].ID)
}

func TestError500OnRefundsAndCount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pi, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-r5", 2500, "pm_card_visa"))
	require.NoError(t, err)
	require.NoError(t, b.sim.InjectFault(providersim.Fault{Operation: providersim.OperationRefundsCreate, Fault: "error_500", Count: 2}))

	for range 2 {
		_, err := b.stripe.Refunds.New(refundParams("evt-r5:refund", pi.ID, 0))
		require.Equal(t, http.StatusInternalServerError, stripeErr(t, err).HTTPStatusCode)
	}
	rf, err := b.stripe.Refunds.New(refundParams("evt-r5:refund", pi.ID, 0))
	require.NoError(t, err, "the third call is past the fault's count")
	require.Equal(t, int64(2500), rf.Amount)
	require.Len(t, b.sim.Ledger().Refunds, 1)
}

func TestDeclineFault(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.sim.InjectFault(providersim.Fault{Operation: providersim.OperationPaymentIntentsCreate, Fault: "decline"}))

	_, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-fd", 2500, "pm_card_visa"))
	se := stripeErr(t, err)
	require.Equal(t, stripe.ErrorCodeCardDeclined, se.Code)
	require.Equal(t, stripe.DeclineCode("generic_decline"), se.DeclineCode)

	pi, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-fd2", 2500, "pm_card_visa"))
	require.NoError(t, err, "count defaults to 1")
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, pi.Status)
}

func TestLatencyFaultDelaysButCompletes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.NoError(t, b.sim.InjectFault(providersim.Fault{Operation: providersim.OperationPaymentIntentsCreate, Fault: "latency:50ms"}))

	start := time.Now()
	pi, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-lat", 2500, "pm_card_visa"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	require.Equal(t, stripe.PaymentIntentStatusSucceeded, pi.Status)
}

func TestInjectFaultValidates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, f := range []providersim.Fault{
		{Operation: "charges.create", Fault: "error_500"},
		{Operation: providersim.OperationPaymentIntentsCreate, Fault: "explode"},
		{Operation: providersim.OperationPaymentIntentsCreate, Fault: "latency:soon"},
		{Operation: providersim.OperationEmailsSend, Fault: "decline"},
		{Operation: providersim.OperationRefundsCreate, Fault: "error_500", Count: -1},
	} {
		require.Error(t, b.sim.InjectFault(f), "%+v", f)
	}
	require.Empty(t, b.sim.Faults())
}

func TestFaultsOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := &providersim.Client{BaseURL: b.baseURL, HTTP: b.http}
	ctx := context.Background()

	require.NoError(t, c.InjectFault(ctx, providersim.Fault{Operation: providersim.OperationPaymentIntentsCreate, Fault: "error_500", Count: 3}))
	require.NoError(t, c.InjectFault(ctx, providersim.Fault{Operation: providersim.OperationEmailsSend, Fault: "latency:1s"}))
	faults, err := c.Faults(ctx)
	require.NoError(t, err)
	require.Equal(t, []providersim.Fault{
		{Operation: providersim.OperationPaymentIntentsCreate, Fault: "error_500", Count: 3},
		{Operation: providersim.OperationEmailsSend, Fault: "latency:1s", Count: 1},
	}, faults)

	err = c.InjectFault(ctx, providersim.Fault{Operation: "nope", Fault: "error_500"})
	require.ErrorContains(t, err, "unknown fault operation")

	require.NoError(t, c.ClearFaults(ctx))
	require.Empty(t, b.sim.Faults())
	_, err = b.stripe.PaymentIntents.New(chargeParams("evt-clear:charge", "evt-clear", 2500, "pm_card_visa"))
	require.NoError(t, err, "cleared faults do not fire")
	_, err = b.stripe.PaymentIntents.New(chargeParams("evt-clear:charge", "evt-clear", 2500, "pm_card_visa"))
	require.NoError(t, err)
	stats, err := c.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, stats.Replays[providersim.OperationPaymentIntentsCreate], "GET /_sim/stats counts the replay")

	// The raw contract: POST /_sim/faults with the JSON of docs/reference.md.
	resp := b.do(t, ctx, http.MethodPost, "/_sim/faults",
		`{"operation": "refunds.create", "fault": "timeout_after_commit", "count": 2}`, nil)
	require.Equal(t, http.StatusOK, resp.status, resp.body)
	require.Equal(t, []providersim.Fault{{Operation: "refunds.create", Fault: "timeout_after_commit", Count: 2}}, b.sim.Faults())
	resp = b.do(t, ctx, http.MethodPost, "/_sim/faults", `{"operation": "refunds.create", "fault": "boom"}`, nil)
	require.Equal(t, http.StatusBadRequest, resp.status)
	require.Contains(t, resp.body, "unknown fault")
}

func TestCloseReleasesAHeldConnection(t *testing.T) {
	t.Parallel()
	sim := providersim.New(providersim.Options{})
	baseURL, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	require.NoError(t, sim.InjectFault(providersim.Fault{Operation: providersim.OperationPaymentIntentsCreate, Fault: "timeout_after_commit"}))

	// A patient client (no timeout) would wait forever; Close must not.
	done := make(chan error, 1)
	go func() {
		_, err := newStripe(baseURL, hc, testKey).PaymentIntents.New(chargeParams("k", "evt-close", 2500, "pm_card_visa"))
		done <- err
	}()
	require.Eventually(t, func() bool { return len(sim.Ledger().PaymentIntents) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, sim.Close())
	select {
	case err := <-done:
		require.Error(t, err, "the connection dropped without an answer")
	case <-time.After(10 * time.Second):
		t.Fatal("the held request did not end on Close")
	}
	require.NoError(t, sim.Close(), "Close twice is fine")
}
