package orders

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateAcceptsAndNormalizes(t *testing.T) {
	t.Parallel()
	p := validParams()
	p.Currency = "USD"
	got, total, err := p.Validate()
	require.NoError(t, err)
	require.Equal(t, "usd", got.Currency, "currency is stored in lower case, like Stripe")
	require.Equal(t, int64(2*1250+500), total, "the amount is computed server-side")

	// The edges of every range are accepted.
	p = validParams()
	p.Items = make([]Item, MaxItems)
	for i := range p.Items {
		p.Items[i] = Item{SKU: strings.Repeat("a", MaxSKULength), Quantity: 1, UnitAmount: 1}
	}
	p.CustomerEmail = strings.Repeat("a", 64) + "@" + strings.Repeat("b", MaxEmailLength-64-1-4) + ".com"
	p.PaymentMethod = strings.Repeat("p", MaxPaymentMethodLength)
	_, total, err = p.Validate()
	require.NoError(t, err)
	require.Equal(t, int64(MaxItems), total)

	p = validParams()
	p.Items = []Item{{SKU: "A", Quantity: 1, UnitAmount: MaxAmount}}
	_, total, err = p.Validate()
	require.NoError(t, err, "a total of exactly MaxAmount is accepted")
	require.Equal(t, int64(MaxAmount), total)
}

// TestValidateRejects has one case per validation rule; the HTTP table in
// orderhttp repeats them end to end.
func TestValidateRejects(t *testing.T) {
	t.Parallel()
	many := make([]Item, MaxItems+1)
	for i := range many {
		many[i] = Item{SKU: "A", Quantity: 1, UnitAmount: 1}
	}
	cases := []struct {
		name   string
		mutate func(p *CreateOrderParams)
		field  string
		code   string
	}{
		{"email missing", func(p *CreateOrderParams) { p.CustomerEmail = "" }, "customer_email", CodeMissingField},
		{"email without at", func(p *CreateOrderParams) { p.CustomerEmail = "ann.example.com" }, "customer_email", CodeInvalidField},
		{"email with display name", func(p *CreateOrderParams) { p.CustomerEmail = "Ann <ann@example.com>" }, "customer_email", CodeInvalidField},
		{"email with spaces", func(p *CreateOrderParams) { p.CustomerEmail = " ann@example.com" }, "customer_email", CodeInvalidField},
		{"email without dot in domain", func(p *CreateOrderParams) { p.CustomerEmail = "ann@localhost" }, "customer_email", CodeInvalidField},
		{"email too long", func(p *CreateOrderParams) {
			p.CustomerEmail = "a@" + strings.Repeat("b", MaxEmailLength) + ".com"
		}, "customer_email", CodeInvalidField},
		{"currency missing", func(p *CreateOrderParams) { p.Currency = "" }, "currency", CodeMissingField},
		{"currency too short", func(p *CreateOrderParams) { p.Currency = "us" }, "currency", CodeInvalidField},
		{"currency not letters", func(p *CreateOrderParams) { p.Currency = "u$d" }, "currency", CodeInvalidField},
		{"currency unknown", func(p *CreateOrderParams) { p.Currency = "abc" }, "currency", CodeUnknownCurrency},
		{"currency without minor unit", func(p *CreateOrderParams) { p.Currency = "xau" }, "currency", CodeUnknownCurrency},
		{"currency withdrawn", func(p *CreateOrderParams) { p.Currency = "hrk" }, "currency", CodeUnknownCurrency},
		{"payment method missing", func(p *CreateOrderParams) { p.PaymentMethod = "" }, "payment_method", CodeMissingField},
		{"payment method charset", func(p *CreateOrderParams) { p.PaymentMethod = "pm card;drop" }, "payment_method", CodeInvalidField},
		{"payment method too long", func(p *CreateOrderParams) {
			p.PaymentMethod = strings.Repeat("p", MaxPaymentMethodLength+1)
		}, "payment_method", CodeInvalidField},
		{"items missing", func(p *CreateOrderParams) { p.Items = nil }, "items", CodeMissingField},
		{"items empty", func(p *CreateOrderParams) { p.Items = []Item{} }, "items", CodeInvalidField},
		{"too many items", func(p *CreateOrderParams) { p.Items = many }, "items", CodeInvalidField},
		{"sku missing", func(p *CreateOrderParams) { p.Items[1].SKU = "" }, "items[1].sku", CodeMissingField},
		{"sku too long", func(p *CreateOrderParams) { p.Items[0].SKU = strings.Repeat("a", MaxSKULength+1) }, "items[0].sku", CodeInvalidField},
		{"sku charset", func(p *CreateOrderParams) { p.Items[0].SKU = "SKU 1" }, "items[0].sku", CodeInvalidField},
		{"sku non-ascii", func(p *CreateOrderParams) { p.Items[0].SKU = "SKÜ" }, "items[0].sku", CodeInvalidField},
		{"quantity zero", func(p *CreateOrderParams) { p.Items[0].Quantity = 0 }, "items[0].quantity", CodeInvalidField},
		{"quantity negative", func(p *CreateOrderParams) { p.Items[1].Quantity = -1 }, "items[1].quantity", CodeInvalidField},
		{"unit amount zero", func(p *CreateOrderParams) { p.Items[0].UnitAmount = 0 }, "items[0].unit_amount", CodeInvalidField},
		{"unit amount negative", func(p *CreateOrderParams) { p.Items[0].UnitAmount = -1250 }, "items[0].unit_amount", CodeInvalidField},
		{"line overflows", func(p *CreateOrderParams) {
			p.Items[0] = Item{SKU: "A", Quantity: math.MaxInt64, UnitAmount: 2}
		}, "items", CodeAmountTooLarge},
		{"sum overflows", func(p *CreateOrderParams) {
			p.Items = []Item{{SKU: "A", Quantity: 1, UnitAmount: math.MaxInt64}, {SKU: "B", Quantity: 1, UnitAmount: 1}}
		}, "items", CodeAmountTooLarge},
		{"above the provider's maximum", func(p *CreateOrderParams) {
			p.Items = []Item{{SKU: "A", Quantity: 2, UnitAmount: 50_000_000}}
		}, "items", CodeAmountTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := validParams()
			p.Items = append([]Item(nil), p.Items...)
			tc.mutate(&p)
			_, _, err := p.Validate()
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			require.Equal(t, tc.field, verr.Field)
			require.Equal(t, tc.code, verr.Code)
			require.NotEmpty(t, verr.Message)
		})
	}
}

func TestIsCurrency(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"usd", "USD", "eur", "jpy", "bhd", "ves", "sle", "zwg", "xcg"} {
		require.True(t, IsCurrency(c), c)
	}
	for _, c := range []string{"", "us", "usdd", "xxx", "xts", "xau", "xdr", "abc", "dem", "hrk", "vef", "mro"} {
		require.False(t, IsCurrency(c), c)
	}
	require.Greater(t, len(minorUnits), 150, "the embedded ISO 4217 list looks truncated")
}

func TestFormatAmount(t *testing.T) {
	t.Parallel()
	for want, in := range map[string]struct {
		amount   int64
		currency string
	}{
		"25.00 USD":              {2500, "usd"},
		"0.05 EUR":               {5, "eur"},
		"0.00 USD":               {0, "usd"},
		"-19.99 EUR":             {-1999, "EUR"},
		"500 JPY":                {500, "jpy"},
		"1.234 BHD":              {1234, "bhd"},
		"0.007 KWD":              {7, "kwd"},
		"999999.99 USD":          {99_999_999, "usd"},
		"2500 XYZ (minor units)": {2500, "xyz"},
	} {
		require.Equal(t, want, FormatAmount(in.amount, in.currency), "%d %s", in.amount, in.currency)
	}
}

func TestOrderTotalOverflow(t *testing.T) {
	t.Parallel()
	total, ok := orderTotal([]Item{{Quantity: 3, UnitAmount: 7}, {Quantity: 1, UnitAmount: 1}})
	require.True(t, ok)
	require.Equal(t, int64(22), total)

	_, ok = orderTotal([]Item{{Quantity: math.MaxInt64, UnitAmount: math.MaxInt64}})
	require.False(t, ok, "a product that overflows 128 bits' low word")
	_, ok = orderTotal([]Item{{Quantity: 1 << 32, UnitAmount: 1 << 31}})
	require.False(t, ok, "a product of exactly 2^63 does not fit an int64")
	_, ok = orderTotal([]Item{{Quantity: 1 << 62, UnitAmount: 1}, {Quantity: 1 << 62, UnitAmount: 1}})
	require.False(t, ok, "a sum of exactly 2^63 does not fit an int64")
	total, ok = orderTotal([]Item{{Quantity: 1 << 62, UnitAmount: 1}, {Quantity: 1<<62 - 1, UnitAmount: 1}})
	require.True(t, ok)
	require.Equal(t, int64(math.MaxInt64), total)
}
