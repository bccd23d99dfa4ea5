package providersim_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76"
)

// listPage fetches one page of GET /v1/payment_intents the way a caller
// that keeps its own cursor does: Single, so stripe-go does not follow
// has_more by itself.
func listPage(t *testing.T, b *testBundle, created *stripe.RangeQueryParams, limit int64, after string) (ids []string, hasMore bool) {
	t.Helper()
	p := &stripe.PaymentIntentListParams{CreatedRange: created}
	p.Limit = stripe.Int64(limit)
	p.Single = true
	if after != "" {
		p.StartingAfter = stripe.String(after)
	}
	it := b.stripe.PaymentIntents.List(p)
	for it.Next() {
		ids = append(ids, it.PaymentIntent().ID)
	}
	require.NoError(t, it.Err())
	return ids, it.PaymentIntentList().HasMore
}

// createMany creates n succeeded PaymentIntents at the clock's current time
// and returns their ids newest first, the order a list returns them in.
func createMany(t *testing.T, b *testBundle, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		pi, err := b.stripe.PaymentIntents.New(chargeParams("", fmt.Sprintf("%s-%d", prefix, i), 1000, "pm_card_visa"))
		require.NoError(t, err)
		ids[n-1-i] = pi.ID
	}
	return ids
}

// A caller walking a created window with its own starting_after cursor, 100
// at a time (the most Stripe allows), sees every object of the window once,
// newest first, and has_more turns false on the last page; an upper bound
// (lte or lt) keeps newer objects out.
func TestPaymentIntentListWalksAWindowWithStartingAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)

	old := createMany(t, b, "old", 1)
	start := b.clock.Now().Unix()
	b.clock.Advance(time.Minute)
	window := createMany(t, b, "window", 230)
	end := b.clock.Now().Unix()
	b.clock.Advance(time.Minute)
	createMany(t, b, "later", 5)
	want := append(window, old...)

	for name, created := range map[string]*stripe.RangeQueryParams{
		"gte+lte": {GreaterThanOrEqual: start, LesserThanOrEqual: end},
		"gte+lt":  {GreaterThanOrEqual: start, LesserThan: end + 1},
	} {
		var got []string
		var more []bool
		cursor := ""
		for range 10 {
			ids, hasMore := listPage(t, b, created, 100, cursor)
			got = append(got, ids...)
			more = append(more, hasMore)
			if !hasMore {
				break
			}
			cursor = ids[len(ids)-1]
		}
		require.Equal(t, want, got, name)
		require.Equal(t, []bool{true, true, false}, more, name)
	}

	// A cursor that is itself outside the window still positions the page:
	// Stripe pages by the cursor object's place in the list, not by filter.
	later, _ := listPage(t, b, nil, 1, "")
	ids, hasMore := listPage(t, b, &stripe.RangeQueryParams{GreaterThanOrEqual: start, LesserThanOrEqual: end}, 100, later[0])
	require.Equal(t, want[:100], ids)
	require.True(t, hasMore)
}

// The paging parameters are refused the way Stripe refuses them, so a caller
// that gets them wrong fails here as it would there.
func TestPaymentIntentListRejectsBadPaging(t *testing.T) {
	t.Parallel()
	b := setup(t)
	createMany(t, b, "x", 1)
	auth := map[string]string{"Authorization": "Bearer " + testKey}

	// An unknown cursor is the invalid_request_error Stripe answers for any
	// id in a parameter that names nothing: resource_missing on that param.
	p := &stripe.PaymentIntentListParams{}
	p.StartingAfter = stripe.String("pi_doesnotexist")
	it := b.stripe.PaymentIntents.List(p)
	require.False(t, it.Next())
	se := stripeErr(t, it.Err())
	require.Equal(t, http.StatusBadRequest, se.HTTPStatusCode)
	require.Equal(t, stripe.ErrorTypeInvalidRequest, se.Type)
	require.Equal(t, stripe.ErrorCodeResourceMissing, se.Code)
	require.Equal(t, "starting_after", se.Param)
	require.Equal(t, "No such payment_intent: 'pi_doesnotexist'", se.Msg)

	for _, tc := range []struct{ query, param string }{
		{"limit=101", "limit"},
		{"limit=0", "limit"},
		{"limit=ten", "limit"},
		{"starting_after=", "starting_after"},
		{"ending_before=", "ending_before"},
		{"created[lte]=soon", "created[lte]"},
		{"created[before]=1", "created[before]"},
		{"starting_after=pi_a&ending_before=pi_b", ""},
	} {
		resp := b.do(t, context.Background(), http.MethodGet, "/v1/payment_intents?"+tc.query, "", auth)
		require.Equal(t, http.StatusBadRequest, resp.status, tc.query)
		require.Contains(t, resp.body, `"type": "invalid_request_error"`, tc.query)
		if tc.param != "" {
			require.Contains(t, resp.body, fmt.Sprintf(`"param": %q`, tc.param), tc.query)
		} else {
			require.NotContains(t, resp.body, `"param"`, tc.query)
		}
	}

	// 100 is the largest page Stripe serves.
	resp := b.do(t, context.Background(), http.MethodGet, "/v1/payment_intents?limit=100", "", auth)
	require.Equal(t, http.StatusOK, resp.status, resp.body)
}
