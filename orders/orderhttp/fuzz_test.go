package orderhttp

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	// The order app's tables in testdb's template (it migrates the sets
	// the binary registers).
	_ "github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// FuzzDecodeCreateOrder feeds arbitrary bodies to the request decoder. It
// proves two things, both ways:
//
//  1. Structurally: decodeCreateOrder and CreateOrderParams.Validate are pure
//     (no database, no globals), and the handler calls both before it opens
//     a transaction, so a rejected input cannot reach the database. The fuzz
//     target checks they never panic and that an accepted input has a
//     positive total.
//  2. Empirically: the same body goes through the real handler on a real
//     test database, and whenever the answer is 4xx the row counts of
//     orders, outbox_events and idempotency_keys are unchanged; when it is
//     201, exactly one order and one event were added. The handler's verdict
//     must also agree with the pure functions'.
//
// The seed corpus runs in plain `go test`; `go test -fuzz
// FuzzDecodeCreateOrder ./orders/orderhttp/` explores further (each fuzz
// worker gets its own database).
func FuzzDecodeCreateOrder(f *testing.F) {
	for _, seed := range []string{
		validBody,
		validBody + " ",
		validBody + "{}",
		``,
		`null`,
		`{}`,
		`[]`,
		`"x"`,
		`{"customer_email":`,
		`{"customer_email":"a@b.co","currency":"usd","payment_method":"pm_card_visa","items":[{"sku":"A","quantity":1,"unit_amount":1}]}`,
		`{"customer_email":"a@b.co","currency":"USD","payment_method":"pm_card_visa","items":[{"sku":"A","quantity":9223372036854775807,"unit_amount":9223372036854775807}]}`,
		`{"customer_email":"a@b.co","currency":"usd","payment_method":"pm_card_visa","items":[{"sku":"A","quantity":-1,"unit_amount":1}]}`,
		`{"customer_email":"a@b.co","currency":"usd","payment_method":"pm_card_visa","items":[{"sku":"A","quantity":1e3,"unit_amount":1}]}`,
		`{"customer_email":"a@b.co","currency":"usd","payment_method":"pm_card_visa","items":[{"sku":"A","quantity":1,"unit_amount":1}],"amount":1}`,
		`{"customer_email":"a@b.co","customer_email":"b@c.co","currency":"usd","payment_method":"x","items":[{"sku":"A","quantity":1,"unit_amount":1}]}`,
		`{"Customer_Email":"a@b.co","currency":"usd","payment_method":"x","items":[{"sku":"A","quantity":1,"unit_amount":1}]}`,
		`{"customer_email":"a@b.co","currency":"usd","payment_method":"x","items":[{"sku":"\u0000","quantity":1,"unit_amount":1}]}`,
		"{\"customer_email\":\"\xff@b.co\",\"currency\":\"usd\",\"payment_method\":\"x\",\"items\":[{\"sku\":\"A\",\"quantity\":1,\"unit_amount\":1}]}",
		`{"items":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	} {
		f.Add([]byte(seed))
	}

	pool, _ := testdb.New(f)
	h, err := New(Config{DB: pool, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(f, err)

	f.Fuzz(func(t *testing.T, body []byte) {
		// 1. The pure path.
		p, decErr := decodeCreateOrder(bytes.NewReader(body))
		accepted := decErr == nil
		if accepted {
			_, total, err := p.Validate()
			accepted = err == nil
			if accepted {
				require.Positive(t, total)
			}
		} else {
			require.GreaterOrEqual(t, decErr.Status, 400)
			require.Less(t, decErr.Status, 500)
		}

		// 2. The real handler on a real database.
		ctx := t.Context()
		before := countRows(ctx, t, pool)
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		after := countRows(ctx, t, pool)
		if len(body) > DefaultMaxBodyBytes {
			accepted = false
		}
		if !accepted {
			require.GreaterOrEqual(t, rec.Code, 400, "%s", rec.Body)
			require.Less(t, rec.Code, 500, "%s", rec.Body)
			require.Equal(t, before, after, "a rejected request wrote something")
			return
		}
		require.Equal(t, http.StatusCreated, rec.Code, "%s", rec.Body)
		require.Equal(t, rowCounts{Orders: before.Orders + 1, Events: before.Events + 1, Keys: before.Keys}, after)
	})
}
