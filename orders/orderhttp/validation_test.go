package orderhttp

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/orders"
)

// withItems returns the valid body with its items replaced.
func withItems(items string) string {
	return `{"customer_email":"ann@example.com","currency":"usd","payment_method":"pm_card_visa","items":` + items + `}`
}

// with returns the valid body with one top-level field's JSON replaced.
func with(field, value string) string {
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(validBody), &m); err != nil {
		panic(err)
	}
	m[field] = json.RawMessage(value)
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func nItems(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"sku":"S` + strconv.Itoa(i) + `","quantity":1,"unit_amount":100}`
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestCreateOrderRejects runs every rule of the request through the real
// handler and database: each rejected request gets its status, code and
// field, and writes nothing.
func TestCreateOrderRejects(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	long := strings.Repeat("x", DefaultMaxBodyBytes)
	cases := []struct {
		name    string
		body    string
		headers []string
		status  int
		code    string
		field   string
	}{
		// Transport and decoding: 4xx before the domain is asked.
		{"no content type", validBody, []string{"Content-Type", ""}, 415, "unsupported_media_type", ""},
		{"text content type", validBody, []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type", ""},
		{"body too large", withItems(`[{"sku":"` + long + `","quantity":1,"unit_amount":1}]`), nil, 413, "body_too_large", ""},
		{"empty body", ``, nil, 400, "invalid_json", ""},
		{"malformed json", `{"customer_email":`, nil, 400, "invalid_json", ""},
		{"syntax error", `{"customer_email" "a"}`, nil, 400, "invalid_json", ""},
		{"trailing object", validBody + `{}`, nil, 400, "invalid_json", ""},
		{"trailing garbage", validBody + ` x`, nil, 400, "invalid_json", ""},
		{"array body", `[` + validBody + `]`, nil, 400, "invalid_type", ""},
		{"client sets amount", with("amount", `1`), nil, 400, "unknown_field", "amount"},
		{"unknown item field", withItems(`[{"sku":"A","quantity":1,"unit_amount":1,"discount":5}]`), nil, 400, "unknown_field", "discount"},
		{"quantity as string", withItems(`[{"sku":"A","quantity":"2","unit_amount":1}]`), nil, 400, "invalid_type", "items.quantity"},
		{"fractional quantity", withItems(`[{"sku":"A","quantity":1.5,"unit_amount":1}]`), nil, 400, "invalid_type", "items.quantity"},
		{"unit_amount beyond int64", withItems(`[{"sku":"A","quantity":1,"unit_amount":9223372036854775808}]`), nil, 400, "invalid_type", "items.unit_amount"},
		{"email as number", with("customer_email", `42`), nil, 400, "invalid_type", "customer_email"},
		{"items as object", with("items", `{}`), nil, 400, "invalid_type", "items"},
		{"idempotency key empty", validBody, []string{"Idempotency-Key", ""}, 400, "invalid_idempotency_key", "Idempotency-Key"},
		{"idempotency key too long", validBody, []string{"Idempotency-Key", strings.Repeat("k", 256)}, 400, "invalid_idempotency_key", "Idempotency-Key"},

		// Domain validation: 422 with the offending field.
		{"null body", `null`, nil, 422, "missing_field", "customer_email"},
		{"email missing", with("customer_email", `""`), nil, 422, "missing_field", "customer_email"},
		{"email null", with("customer_email", `null`), nil, 422, "missing_field", "customer_email"},
		{"email malformed", with("customer_email", `"ann.example.com"`), nil, 422, "invalid_field", "customer_email"},
		{"email display name", with("customer_email", `"Ann <ann@example.com>"`), nil, 422, "invalid_field", "customer_email"},
		{"email bare host", with("customer_email", `"ann@localhost"`), nil, 422, "invalid_field", "customer_email"},
		{"email too long", with("customer_email", `"a@`+strings.Repeat("b", 260)+`.com"`), nil, 422, "invalid_field", "customer_email"},
		{"currency missing", with("currency", `""`), nil, 422, "missing_field", "currency"},
		{"currency malformed", with("currency", `"us"`), nil, 422, "invalid_field", "currency"},
		{"currency digits", with("currency", `"840"`), nil, 422, "invalid_field", "currency"},
		{"currency unknown", with("currency", `"abc"`), nil, 422, "unknown_currency", "currency"},
		{"currency no minor unit", with("currency", `"xau"`), nil, 422, "unknown_currency", "currency"},
		{"payment method missing", with("payment_method", `""`), nil, 422, "missing_field", "payment_method"},
		{"payment method charset", with("payment_method", `"pm card"`), nil, 422, "invalid_field", "payment_method"},
		{"payment method too long", with("payment_method", `"`+strings.Repeat("p", 256)+`"`), nil, 422, "invalid_field", "payment_method"},
		{"items missing", with("items", `null`), nil, 422, "missing_field", "items"},
		{"items empty", with("items", `[]`), nil, 422, "invalid_field", "items"},
		{"101 items", with("items", nItems(101)), nil, 422, "invalid_field", "items"},
		{"sku missing", withItems(`[{"quantity":1,"unit_amount":1}]`), nil, 422, "missing_field", "items[0].sku"},
		{"sku too long", withItems(`[{"sku":"` + strings.Repeat("s", 65) + `","quantity":1,"unit_amount":1}]`), nil, 422, "invalid_field", "items[0].sku"},
		{"sku charset", withItems(`[{"sku":"A","quantity":1,"unit_amount":1},{"sku":"B/2","quantity":1,"unit_amount":1}]`), nil, 422, "invalid_field", "items[1].sku"},
		{"quantity missing", withItems(`[{"sku":"A","unit_amount":1}]`), nil, 422, "invalid_field", "items[0].quantity"},
		{"quantity zero", withItems(`[{"sku":"A","quantity":0,"unit_amount":1}]`), nil, 422, "invalid_field", "items[0].quantity"},
		{"quantity negative", withItems(`[{"sku":"A","quantity":-3,"unit_amount":1}]`), nil, 422, "invalid_field", "items[0].quantity"},
		{"unit amount zero", withItems(`[{"sku":"A","quantity":1,"unit_amount":0}]`), nil, 422, "invalid_field", "items[0].unit_amount"},
		{"unit amount negative", withItems(`[{"sku":"A","quantity":1,"unit_amount":-1}]`), nil, 422, "invalid_field", "items[0].unit_amount"},
		{"total overflows", withItems(`[{"sku":"A","quantity":` + strconv.FormatInt(math.MaxInt64, 10) + `,"unit_amount":2}]`), nil, 422, "amount_too_large", "items"},
		{"sum overflows", withItems(`[{"sku":"A","quantity":1,"unit_amount":` + strconv.FormatInt(math.MaxInt64, 10) + `},{"sku":"B","quantity":1,"unit_amount":1}]`), nil, 422, "amount_too_large", "items"},
	}
	b.requireNothingWrittenAtEnd(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := b.post(t, tc.body, tc.headers...)
			requireRejected(t, resp, tc.status, tc.code, tc.field)
			require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		})
	}
}

// TestCreateOrderAcceptsEdges: the limits themselves are valid.
func TestCreateOrderAcceptsEdges(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	for _, body := range []string{
		with("items", nItems(100)),
		with("currency", `"JPY"`),
		withItems(`[{"sku":"` + strings.Repeat("s", 64) + `","quantity":1,"unit_amount":` + strconv.FormatInt(orders.MaxAmount, 10) + `}]`),
		validBody + "\n\t ",
	} {
		resp := b.post(t, body, "Content-Type", "application/json; charset=utf-8")
		require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
	}
	require.Equal(t, rowCounts{Orders: 4, Events: 4}, countRows(b.ctx, t, b.pool))
}
