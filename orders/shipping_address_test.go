package orders

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest"
)

func TestValidateShippingAddress(t *testing.T) {
	t.Parallel()
	p := validParams()
	p.ShippingAddress = &ShippingAddress{Name: "Ada", Line1: "Unter den Linden 1", City: "Berlin", PostalCode: "10117", Country: "de"}
	got, _, err := p.Validate()
	require.NoError(t, err)
	require.Equal(t, "DE", got.ShippingAddress.Country, "the country is stored in upper case")
	require.Equal(t, "de", p.ShippingAddress.Country, "the caller's address is not changed")

	edges := *p.ShippingAddress
	edges.Name = strings.Repeat("n", MaxAddressNameLength)
	edges.Line1 = "Straße 1 – Hinterhaus"
	edges.Line2 = strings.Repeat("l", MaxAddressLineLength)
	edges.PostalCode = strings.Repeat("9", MaxPostalCodeLength)
	edges.Country = "GB"
	p.ShippingAddress = &edges
	_, _, err = p.Validate()
	require.NoError(t, err)

	cases := []struct {
		name   string
		mutate func(a *ShippingAddress)
		field  string
		code   string
	}{
		{"name missing", func(a *ShippingAddress) { a.Name = "" }, "shipping_address.name", CodeMissingField},
		{"name too long", func(a *ShippingAddress) { a.Name = strings.Repeat("n", MaxAddressNameLength+1) }, "shipping_address.name", CodeInvalidField},
		{"name with newline", func(a *ShippingAddress) { a.Name = "Ada\nLovelace" }, "shipping_address.name", CodeInvalidField},
		{"line1 missing", func(a *ShippingAddress) { a.Line1 = "" }, "shipping_address.line1", CodeMissingField},
		{"line1 padded", func(a *ShippingAddress) { a.Line1 = " 1 Main St" }, "shipping_address.line1", CodeInvalidField},
		{"line2 too long", func(a *ShippingAddress) { a.Line2 = strings.Repeat("l", MaxAddressLineLength+1) }, "shipping_address.line2", CodeInvalidField},
		{"line2 invalid utf-8", func(a *ShippingAddress) { a.Line2 = "\xff" }, "shipping_address.line2", CodeInvalidField},
		{"city missing", func(a *ShippingAddress) { a.City = "" }, "shipping_address.city", CodeMissingField},
		{"city with tab", func(a *ShippingAddress) { a.City = "Ber\tlin" }, "shipping_address.city", CodeInvalidField},
		{"postal code missing", func(a *ShippingAddress) { a.PostalCode = "" }, "shipping_address.postal_code", CodeMissingField},
		{"postal code charset", func(a *ShippingAddress) { a.PostalCode = "10117!" }, "shipping_address.postal_code", CodeInvalidField},
		{"postal code too long", func(a *ShippingAddress) { a.PostalCode = strings.Repeat("1", MaxPostalCodeLength+1) }, "shipping_address.postal_code", CodeInvalidField},
		{"country missing", func(a *ShippingAddress) { a.Country = "" }, "shipping_address.country", CodeMissingField},
		{"country alpha-3", func(a *ShippingAddress) { a.Country = "DEU" }, "shipping_address.country", CodeInvalidField},
		{"country reserved", func(a *ShippingAddress) { a.Country = "UK" }, "shipping_address.country", CodeInvalidField},
		{"country unassigned", func(a *ShippingAddress) { a.Country = "ZZ" }, "shipping_address.country", CodeInvalidField},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := validParams()
			a := ShippingAddress{Name: "Ada", Line1: "Unter den Linden 1", City: "Berlin", PostalCode: "10117", Country: "DE"}
			tc.mutate(&a)
			p.ShippingAddress = &a
			_, _, err := p.Validate()
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			require.Equal(t, tc.field, verr.Field)
			require.Equal(t, tc.code, verr.Code)
		})
	}
}

func TestIsCountry(t *testing.T) {
	t.Parallel()
	require.Len(t, countries, 249, "ISO 3166-1 assigns 249 alpha-2 codes")
	for _, c := range []string{"DE", "de", "US", "GB", "SS", "CW"} {
		require.True(t, IsCountry(c), c)
	}
	for _, c := range []string{"", "D", "DEU", "UK", "EU", "XK", "ZZ", "1A"} {
		require.False(t, IsCountry(c), c)
	}
}

// An order with an address is stored with it and announced as v2; the same
// API without one still writes v1, which workers that predate v2 read.
func TestCreateOrderWithShippingAddress(t *testing.T) {
	t.Parallel()
	b := setup(t)

	p := validParams()
	p.ShippingAddress = &ShippingAddress{Name: "Ada", Line1: "Unter den Linden 1", City: "Berlin", PostalCode: "10117", Country: "de"}
	withAddr, err := CreateOrder(b.ctx, b.pool, p)
	require.NoError(t, err)
	without, err := CreateOrder(b.ctx, b.pool, validParams())
	require.NoError(t, err)

	want := &ShippingAddress{Name: "Ada", Line1: "Unter den Linden 1", City: "Berlin", PostalCode: "10117", Country: "DE"}
	for _, tc := range []struct {
		id      uuid.UUID
		version int
		addr    *ShippingAddress
	}{{withAddr.OrderID, OrderCreatedV2, want}, {without.OrderID, OrderCreatedV1, nil}} {
		created := outboxtest.RequireEnqueued(t, b.pool, outboxtest.Match{AggregateType: AggregateType, AggregateID: tc.id.String(), Type: EventOrderCreated})
		version, payload := created.SchemaVersion, created.Payload
		require.Equal(t, tc.version, version)
		ev, err := DecodeOrderCreated(version, payload)
		require.NoError(t, err)
		require.Equal(t, tc.addr, ev.ShippingAddress)
		if tc.addr == nil {
			var raw map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(payload, &raw))
			require.NotContains(t, raw, "shipping_address", "a v1 payload is the v1 shape, nothing added")
		}

		o, err := GetOrder(b.ctx, b.pool, tc.id)
		require.NoError(t, err)
		require.Equal(t, tc.addr, o.ShippingAddress)
	}
}

// The idempotency fingerprint covers the address: another address is
// another request, a case-only difference in the country is the same one,
// and a request without an address fingerprints as it did before v2.
func TestIdempotencyFingerprintCoversShippingAddress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	addr := ShippingAddress{Name: "Ada", Line1: "Unter den Linden 1", City: "Berlin", PostalCode: "10117", Country: "DE"}
	p := validParams()
	p.ShippingAddress = &addr
	first, err := CreateOrderIdempotent(b.ctx, b.pool, "k-ship", p)
	require.NoError(t, err)

	lower := addr
	lower.Country = "de"
	p.ShippingAddress = &lower
	again, err := CreateOrderIdempotent(b.ctx, b.pool, "k-ship", p)
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.JSONEq(t, string(first.Body), string(again.Body))

	other := addr
	other.PostalCode = "10115"
	p.ShippingAddress = &other
	_, err = CreateOrderIdempotent(b.ctx, b.pool, "k-ship", p)
	require.ErrorIs(t, err, ErrIdempotencyKeyReused)

	p.ShippingAddress = nil
	_, err = CreateOrderIdempotent(b.ctx, b.pool, "k-ship", p)
	require.ErrorIs(t, err, ErrIdempotencyKeyReused, "dropping the address is another request too")

	// Requests without an address keep the fingerprint they had before v2,
	// so keys stored by the old build still replay.
	plain, _, err := validParams().Validate()
	require.NoError(t, err)
	body, err := json.Marshal(plain)
	require.NoError(t, err)
	require.NotContains(t, string(body), "shipping_address")
	require.Equal(t, 1, b.counts(t).Orders)
}
