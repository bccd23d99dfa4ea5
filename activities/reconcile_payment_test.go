package activities

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"

	"github.com/outflow/outflow/internal/dev/testclock"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/providersim"
)

// providerTap sits between stripe-go and the simulator. It counts list
// pages, can slow them down like a busy account's, and can blind the search
// the way Stripe's index lags writes (the simulator's search never lags), so
// that reconciliation has to fall back on the list.
type providerTap struct {
	next        http.RoundTripper
	listLatency atomic.Int64 // a time.Duration
	blindSearch bool
	lists       atomic.Int64
	searches    atomic.Int64
}

func (p *providerTap) RoundTrip(req *http.Request) (*http.Response, error) {
	switch {
	case req.Method == http.MethodGet && req.URL.Path == "/v1/payment_intents":
		p.lists.Add(1)
		if d := time.Duration(p.listLatency.Load()); d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
		}
	case req.Method == http.MethodGet && req.URL.Path == "/v1/payment_intents/search":
		p.searches.Add(1)
		if p.blindSearch {
			return &http.Response{
				StatusCode: http.StatusOK,
				Header:     http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(
					`{"object":"search_result","data":[],"has_more":false,"next_page":null,"url":"/v1/payment_intents/search"}`)),
				Request: req,
			}, nil
		}
	}
	return p.next.RoundTrip(req)
}

// setupTapped is setup with the provider reached through a providerTap. Its
// search is blind from the start: these tests are about the list.
func setupTapped(t *testing.T) (*Activities, *testBundle, *providerTap) {
	t.Helper()
	clk := testclock.New(time.Now().UTC().Truncate(time.Second))
	sim := providersim.New(providersim.Options{Now: clk.Now})
	base, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	transport := &http.Transport{}
	t.Cleanup(func() {
		transport.CloseIdleConnections()
		_ = sim.Close()
	})
	tap := &providerTap{next: transport, blindSearch: true}

	acts, err := New(Config{StripeAPIBase: base, EmailAPIBase: base, HTTPTimeout: 5 * time.Second})
	require.NoError(t, err)
	// As NewStripe builds it (network retries off), through the tap.
	backend := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
		URL:               stripe.String(base),
		HTTPClient:        &http.Client{Timeout: 5 * time.Second, Transport: tap},
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	acts.Stripe = client.New(simulatorKey, &stripe.Backends{API: backend, Connect: backend, Uploads: backend})
	acts.Now = clk.Now
	acts.Metrics = mustMetrics(t)
	noFaults, err := failpoints.Parse("")
	require.NoError(t, err)
	acts.Failpoints = noFaults
	return acts, &testBundle{sim: sim, clock: clk}, tap
}

// chargeOthers charges n other events at the clock's current time: the
// traffic of a busy account that a list has to read through.
func chargeOthers(t *testing.T, acts *Activities, n int) {
	t.Helper()
	for range n {
		_, err := acts.ChargePayment(ctxT(t), newCharge("pm_card_visa"))
		require.NoError(t, err)
	}
}

// busyAccount charges the order's event (when order is not nil), then, a
// minute later, n other events; then three days pass, a late cancel. The
// order's PaymentIntent is the oldest, the last one a newest-first list
// reaches. It returns the order event's time.
func busyAccount(t *testing.T, acts *Activities, b *testBundle, order *ChargeInput, n int) (occurred time.Time) {
	t.Helper()
	occurred = b.clock.Now()
	if order != nil {
		_, err := acts.ChargePayment(ctxT(t), *order)
		require.NoError(t, err)
	}
	b.clock.Advance(time.Minute)
	chargeOthers(t, acts, n)
	b.clock.Advance(72 * time.Hour)
	return occurred
}

// reconcileCall is one call's result, and how many list pages it read.
type reconcileCall struct {
	res   ReconcileResult
	pages int64
}

// reconcileToEnd calls ReconcilePayment the way the workflow does, again
// with the returned cursor while the result is Incomplete, at most max
// times, and returns every call.
func reconcileToEnd(t *testing.T, acts *Activities, tap *providerTap, in ReconcileInput, maxCalls int) []reconcileCall {
	t.Helper()
	var calls []reconcileCall
	for range maxCalls {
		before := tap.lists.Load()
		res, err := acts.ReconcilePayment(ctxT(t), in)
		require.NoError(t, err)
		calls = append(calls, reconcileCall{res: res, pages: tap.lists.Load() - before})
		if !res.Incomplete {
			return calls
		}
		require.NotEmpty(t, res.ListCursor, "an incomplete result says where to continue")
		require.NotEqual(t, in.ListCursor, res.ListCursor, "every call moves the cursor")
		in.ListCursor = res.ListCursor
	}
	require.Failf(t, "the walk did not end", "still incomplete after %d calls: %+v", maxCalls, calls)
	return nil
}

// A late cancel on a busy account: the order's charge is older than 250
// other PaymentIntents. One page per call cannot reach it, so each call
// returns Incomplete with a cursor, and the calls that follow it find the
// charge without re-reading a page.
func TestReconcileListContinuesFromItsCursor(t *testing.T) {
	t.Parallel()
	acts, b, tap := setupTapped(t)
	order := newCharge("pm_card_visa")
	occurred := busyAccount(t, acts, b, &order, 250)
	charge := b.sim.Ledger().PaymentIntents[0]
	require.Equal(t, order.EventID, charge.Metadata[MetadataEventID])

	calls := reconcileToEnd(t, acts, tap, ReconcileInput{Charge: order, OccurredAt: occurred, ListPages: 1}, 10)

	require.Len(t, calls, 3, "251 PaymentIntents are three pages of 100")
	for _, c := range calls[:2] {
		require.Equal(t, NotCharged, c.res.Outcome)
		require.Equal(t, "list", c.res.Via)
	}
	require.Equal(t, ReconcileResult{Outcome: Charged, PaymentIntentID: charge.ID, Amount: 2500, Currency: "usd", Via: "list"}, calls[2].res)
	for _, c := range calls {
		require.Equal(t, int64(1), c.pages, "ListPages 1 reads one page per call")
	}
	require.Len(t, b.sim.Ledger().PaymentIntents, 251, "reconciliation only looks")
}

// Nothing was charged for the event: the walk ends with NotCharged and
// Incomplete false, and no cursor to follow.
func TestReconcileListWalkEndsNotCharged(t *testing.T) {
	t.Parallel()
	acts, b, tap := setupTapped(t)
	order := newCharge("pm_card_visa")
	occurred := busyAccount(t, acts, b, nil, 250)

	calls := reconcileToEnd(t, acts, tap, ReconcileInput{Charge: order, OccurredAt: occurred, ListPages: 1}, 10)

	require.Len(t, calls, 3)
	require.True(t, calls[0].res.Incomplete)
	require.True(t, calls[1].res.Incomplete)
	require.Equal(t, ReconcileResult{Outcome: NotCharged, Via: "list"}, calls[2].res)
	require.Len(t, b.sim.Ledger().PaymentIntents, 250, "reconciliation only looks")
}

// A call with the workflows' ListPages reads at most
// DefaultReconcileListPages pages, however long the list; the next call
// continues where it stopped.
func TestReconcileDefaultCallReadsAtMostDefaultPages(t *testing.T) {
	t.Parallel()
	acts, b, tap := setupTapped(t)
	order := newCharge("pm_card_visa")
	occurred := busyAccount(t, acts, b, &order, DefaultReconcileListPages*100+5)

	calls := reconcileToEnd(t, acts, tap, ReconcileInput{Charge: order, OccurredAt: occurred, ListPages: DefaultReconcileListPages}, 3)

	require.Len(t, calls, 2)
	require.True(t, calls[0].res.Incomplete)
	require.Equal(t, int64(DefaultReconcileListPages), calls[0].pages)
	require.Equal(t, Charged, calls[1].res.Outcome)
	require.Equal(t, int64(1), calls[1].pages)
}

// A charge found on the first page ends the walk there.
func TestReconcileListStopsAtTheCharge(t *testing.T) {
	t.Parallel()
	acts, b, tap := setupTapped(t)
	occurred := b.clock.Now()
	chargeOthers(t, acts, 250)
	b.clock.Advance(time.Minute)
	order := newCharge("pm_card_visa")
	charged, err := acts.ChargePayment(ctxT(t), order)
	require.NoError(t, err)
	b.clock.Advance(72 * time.Hour)

	calls := reconcileToEnd(t, acts, tap, ReconcileInput{Charge: order, OccurredAt: occurred}, 1)

	require.Equal(t, ReconcileResult{Outcome: Charged, PaymentIntentID: charged.PaymentIntentID, Amount: 2500, Currency: "usd", Via: "list"}, calls[0].res)
	require.Equal(t, int64(1), calls[0].pages)
}

// ListUntil bounds the window from above: the PaymentIntents created after
// it are not read at all.
func TestReconcileListUntilBoundsTheWindow(t *testing.T) {
	t.Parallel()
	acts, b, tap := setupTapped(t)
	order := newCharge("pm_card_visa")
	occurred := busyAccount(t, acts, b, &order, 150)

	calls := reconcileToEnd(t, acts, tap, ReconcileInput{
		Charge: order, OccurredAt: occurred, ListPages: 1, ListUntil: occurred.Add(30 * time.Second),
	}, 1)

	require.Equal(t, Charged, calls[0].res.Outcome)
	require.Equal(t, int64(1), calls[0].pages)
}

// A declined charge found by the list is Declined, not "not charged" (which
// would make the saga charge again), even by a call that stops before the
// list's end; a call with pages to spare reads on, for an older success.
func TestReconcileListFindsADeclinedCharge(t *testing.T) {
	t.Parallel()
	acts, b, tap := setupTapped(t)
	occurred := b.clock.Now()
	chargeOthers(t, acts, 150)
	order := newCharge("pm_card_chargeDeclined")
	_, err := acts.ChargePayment(ctxT(t), order)
	requireAppError(t, err, ErrTypePaymentDeclined, true)
	declined := b.sim.Ledger().PaymentIntents[150]
	require.Equal(t, order.EventID, declined.Metadata[MetadataEventID])
	b.clock.Advance(time.Minute)
	chargeOthers(t, acts, 150)
	b.clock.Advance(72 * time.Hour)
	want := ReconcileResult{Outcome: Declined, PaymentIntentID: declined.ID, Via: "list"}

	// Newest first, it is the 151st of 301: on the second page, which is
	// not the last.
	calls := reconcileToEnd(t, acts, tap, ReconcileInput{Charge: order, OccurredAt: occurred, ListPages: 1}, 10)
	require.Len(t, calls, 2)
	require.Equal(t, want, calls[1].res)

	calls = reconcileToEnd(t, acts, tap, ReconcileInput{Charge: order, OccurredAt: occurred, ListPages: 5}, 1)
	require.Equal(t, want, calls[0].res)
	require.Equal(t, int64(4), calls[0].pages, "to the list's end")
}

// A late cancel on a busy account must not spend the activity's whole
// deadline listing: a call stops between pages while there is still time to
// answer, and returns Incomplete with its cursor instead of timing out (as
// every attempt did, until the cancel failed).
func TestReconcileListStopsBeforeTheDeadline(t *testing.T) {
	t.Parallel()
	acts, b, tap := setupTapped(t)
	order := newCharge("pm_card_visa")
	occurred := busyAccount(t, acts, b, &order, 250)
	// Three pages at 400 ms would fit the 3 s deadline, not with the
	// reserve an answer needs.
	tap.listLatency.Store(int64(400 * time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	before := tap.lists.Load()
	rec, err := acts.ReconcilePayment(ctx, ReconcileInput{Charge: order, OccurredAt: occurred, ListPages: 100})
	require.NoError(t, err)
	require.NoError(t, ctx.Err(), "answered before the deadline")
	require.True(t, rec.Incomplete)
	require.NotEmpty(t, rec.ListCursor)
	pages := tap.lists.Load() - before
	require.GreaterOrEqual(t, pages, int64(1))
	require.Less(t, pages, int64(3))

	tap.listLatency.Store(0)
	calls := reconcileToEnd(t, acts, tap, ReconcileInput{Charge: order, OccurredAt: occurred, ListCursor: rec.ListCursor}, 1)
	require.Equal(t, Charged, calls[0].res.Outcome)
}

// An input recorded before the list was bounded (ListPages zero) belongs to
// workflow code that reads anything but Charged as "not charged": it must
// get the whole list, never a truncated "incomplete" answer.
func TestReconcileLegacyCallReadsTheWholeList(t *testing.T) {
	t.Parallel()
	acts, b, tap := setupTapped(t)
	order := newCharge("pm_card_visa")
	occurred := busyAccount(t, acts, b, &order, DefaultReconcileListPages*100+5)

	calls := reconcileToEnd(t, acts, tap, ReconcileInput{Charge: order, OccurredAt: occurred}, 1)

	require.Len(t, calls, 1)
	require.False(t, calls[0].res.Incomplete)
	require.Equal(t, Charged, calls[0].res.Outcome)
	require.Greater(t, calls[0].pages, int64(DefaultReconcileListPages))
}
