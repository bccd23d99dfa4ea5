package providersim_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v76"
)

// search runs a PaymentIntent search through stripe-go's iterator (which
// follows next_page) and returns the ids found.
func search(t *testing.T, b *testBundle, query string, limit int64) []string {
	t.Helper()
	p := &stripe.PaymentIntentSearchParams{}
	p.Query = query
	if limit > 0 {
		p.Limit = stripe.Int64(limit)
	}
	it := b.stripe.PaymentIntents.Search(p)
	var ids []string
	for it.Next() {
		ids = append(ids, it.PaymentIntent().ID)
	}
	require.NoError(t, it.Err())
	return ids
}

func TestSearchByMetadata(t *testing.T) {
	t.Parallel()
	b := setup(t)

	ok1, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-s1", 2500, "pm_card_visa"))
	require.NoError(t, err)
	ok2, err := b.stripe.PaymentIntents.New(chargeParams("", "evt-s2", 7500, "pm_card_visa"))
	require.NoError(t, err)
	_, err = b.stripe.PaymentIntents.New(chargeParams("", "evt-s3", 2500, "pm_card_chargeDeclined"))
	declined := stripeErr(t, err).PaymentIntent

	require.Equal(t, []string{ok2.ID}, search(t, b, "metadata['event_id']:'evt-s2'", 0))
	require.Equal(t, []string{ok2.ID}, search(t, b, `metadata["event_id"]:"evt-s2"`, 0), "double quotes too")
	require.Equal(t, []string{declined.ID}, search(t, b, "metadata['event_id']:'evt-s3'", 0), "declined intents are found")
	require.Empty(t, search(t, b, "metadata['event_id']:'evt-s3' AND status:'succeeded'", 0))
	require.Equal(t, []string{ok1.ID}, search(t, b, "metadata['order_id']:'order-evt-s1' AND status:'succeeded'", 0))
	require.Equal(t, []string{ok2.ID, ok1.ID}, search(t, b, "status:'succeeded'", 0), "newest first")
	require.Equal(t, []string{ok2.ID, ok1.ID}, search(t, b, "metadata['event_id']:'evt-s1' OR metadata['event_id']:'evt-s2'", 0))
	require.Equal(t, []string{ok2.ID}, search(t, b, "status:'succeeded' amount>5000", 0), "whitespace is AND")
	require.Equal(t, []string{declined.ID}, search(t, b, "-status:'succeeded'", 0))
	require.Empty(t, search(t, b, "metadata['missing']:'x'", 0))
	require.Len(t, search(t, b, "metadata['missing']:null", 0), 3)
	require.Empty(t, search(t, b, "metadata['event_id']:'evt-nope'", 0))
}

func TestSearchPaging(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var want []string
	for i := range 5 {
		pi, err := b.stripe.PaymentIntents.New(chargeParams("", fmt.Sprintf("evt-page-%d", i), 1000, "pm_card_visa"))
		require.NoError(t, err)
		want = append([]string{pi.ID}, want...)
	}
	require.Equal(t, want, search(t, b, "status:'succeeded'", 2), "the iterator follows next_page across three pages")
}

func TestSearchRejectsInvalidQueries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, q := range []string{
		"",
		"nonsense",
		"description:'x'",
		"metadata['a']:'x' AND status:'y' OR amount:1",
		"amount:'lots'",
		"status>'a'",
		"metadata['unterminated:'x'",
	} {
		p := &stripe.PaymentIntentSearchParams{}
		p.Query = q
		it := b.stripe.PaymentIntents.Search(p)
		require.False(t, it.Next(), q)
		se := stripeErr(t, it.Err())
		require.Equal(t, http.StatusBadRequest, se.HTTPStatusCode, q)
		require.Equal(t, "query", se.Param, q)
	}
}
