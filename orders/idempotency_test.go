package orders

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCreateOrderIdempotentReplay(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first, err := CreateOrderIdempotent(b.ctx, b.pool, "key-1", validParams())
	require.NoError(t, err)
	require.False(t, first.Replayed)
	require.Equal(t, http.StatusCreated, first.Status)
	after := b.counts(t)
	require.Equal(t, rowCounts{Orders: 1, Events: 1, Sequences: 1, Keys: 1}, after)

	// The same request, formatted differently (currency case), is the same.
	p := validParams()
	p.Currency = "USD"
	again, err := CreateOrderIdempotent(b.ctx, b.pool, "key-1", p)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, http.StatusCreated, again.Status)
	require.JSONEq(t, string(first.Body), string(again.Body))
	require.Equal(t, after, b.counts(t), "a replay writes nothing")
}

func TestCreateOrderIdempotentReuse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := CreateOrderIdempotent(b.ctx, b.pool, "key-1", validParams())
	require.NoError(t, err)
	after := b.counts(t)
	p := validParams()
	p.Items[0].Quantity++
	_, err = CreateOrderIdempotent(b.ctx, b.pool, "key-1", p)
	require.ErrorIs(t, err, ErrIdempotencyKeyReused)
	require.Equal(t, after, b.counts(t))
}

func TestCreateOrderIdempotentRejectsBadKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, key := range []string{"", strings.Repeat("k", MaxIdempotencyKeyLength+1), "tab\tkey", "naïve"} {
		_, err := CreateOrderIdempotent(b.ctx, b.pool, key, validParams())
		require.ErrorIs(t, err, ErrInvalidIdempotencyKey, "%q", key)
	}
	require.NoError(t, ValidateIdempotencyKey(strings.Repeat("k", MaxIdempotencyKeyLength)))
	require.Equal(t, rowCounts{}, b.counts(t))
}

// TestCreateOrderIdempotentConcurrent: many simultaneous requests with one
// key create one order; all of them answer with its response, and the
// losers' rolled-back orders leave no trace.
func TestCreateOrderIdempotentConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 20
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make(chan StoredResponse, n)
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := CreateOrderIdempotent(b.ctx, b.pool, "same-key", validParams())
			errs <- err
			results <- res
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	close(results)
	for err := range errs {
		require.NoError(t, err)
	}
	var bodies []string
	writers := 0
	for r := range results {
		if !r.Replayed {
			writers++
		}
		var res CreateOrderResult
		require.NoError(t, json.Unmarshal(r.Body, &res))
		bodies = append(bodies, res.OrderID.String())
	}
	require.Equal(t, 1, writers)
	for _, id := range bodies {
		require.Equal(t, bodies[0], id, "every request got the one order")
	}
	require.Equal(t, rowCounts{Orders: 1, Events: 1, Sequences: 1, Keys: 1}, b.counts(t))
}
