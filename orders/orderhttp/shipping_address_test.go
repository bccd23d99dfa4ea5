package orderhttp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/outboxtest"
)

const validAddress = `{"name":"Ada Lovelace","line1":"Unter den Linden 1","line2":"3. OG","city":"Berlin","postal_code":"10117","country":"de"}`

// withAddress returns the valid body with shipping_address set to the valid
// address with one field's JSON replaced ("" leaves it as is; a nil value
// removes the field).
func withAddress(field string, value *string) string {
	a := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(validAddress), &a); err != nil {
		panic(err)
	}
	if field != "" {
		if value == nil {
			delete(a, field)
		} else {
			a[field] = json.RawMessage(*value)
		}
	}
	b, err := json.Marshal(a)
	if err != nil {
		panic(err)
	}
	return with("shipping_address", string(b))
}

func ptr(s string) *string { return &s }

// createdEvent returns the schema version and payload of the order's
// OrderCreated event.
func (b testBundle) createdEvent(t *testing.T, orderID string) (int, orders.OrderCreated) {
	t.Helper()
	created := outboxtest.RequireEnqueued(t, b.pool,
		outboxtest.Match{AggregateType: orders.AggregateType, AggregateID: orderID, Type: orders.EventOrderCreated})
	ev, err := orders.DecodeOrderCreated(created.SchemaVersion, created.Payload)
	require.NoError(t, err)
	return created.SchemaVersion, ev
}

// An order with a shipping address is a v2 OrderCreated and shows its
// address in GET; one without is v1, with "shipping_address": null.
func TestCreateOrderShippingAddress(t *testing.T) {
	t.Parallel()
	b := setup(t, "")

	for _, tc := range []struct {
		name    string
		body    string
		version int
		want    *orders.ShippingAddress
	}{
		{"with address", withAddress("", nil), orders.OrderCreatedV2, &orders.ShippingAddress{
			Name: "Ada Lovelace", Line1: "Unter den Linden 1", Line2: "3. OG", City: "Berlin", PostalCode: "10117", Country: "DE"}},
		{"without line2", withAddress("line2", nil), orders.OrderCreatedV2, &orders.ShippingAddress{
			Name: "Ada Lovelace", Line1: "Unter den Linden 1", City: "Berlin", PostalCode: "10117", Country: "DE"}},
		{"absent", validBody, orders.OrderCreatedV1, nil},
		{"null", with("shipping_address", `null`), orders.OrderCreatedV1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := b.post(t, tc.body)
			require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Body)
			var created orders.CreateOrderResult
			require.NoError(t, json.Unmarshal(resp.Body, &created))

			version, ev := b.createdEvent(t, created.OrderID.String())
			require.Equal(t, tc.version, version)
			require.Equal(t, tc.want, ev.ShippingAddress)

			resp = b.do(t, http.MethodGet, "/orders/"+created.OrderID.String(), "")
			require.Equal(t, http.StatusOK, resp.Status)
			var got struct {
				ShippingAddress *orders.ShippingAddress `json:"shipping_address"`
			}
			require.NoError(t, json.Unmarshal(resp.Body, &got))
			require.Equal(t, tc.want, got.ShippingAddress)
			var raw map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(resp.Body, &raw))
			require.Contains(t, raw, "shipping_address", "the field is always there, null without an address")
		})
	}
}

// Every sub-field is checked: a 422 names it, and nothing is written.
func TestCreateOrderRejectsShippingAddress(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	cases := []struct {
		name   string
		body   string
		status int
		code   string
		field  string
	}{
		{"empty object", with("shipping_address", `{}`), 422, "missing_field", "shipping_address.name"},
		{"name missing", withAddress("name", nil), 422, "missing_field", "shipping_address.name"},
		{"name empty", withAddress("name", ptr(`""`)), 422, "missing_field", "shipping_address.name"},
		{"name too long", withAddress("name", ptr(`"`+strings.Repeat("n", 201)+`"`)), 422, "invalid_field", "shipping_address.name"},
		{"name with newline", withAddress("name", ptr(`"Ada\nLovelace"`)), 422, "invalid_field", "shipping_address.name"},
		{"line1 missing", withAddress("line1", nil), 422, "missing_field", "shipping_address.line1"},
		{"line1 padded", withAddress("line1", ptr(`"Unter den Linden 1 "`)), 422, "invalid_field", "shipping_address.line1"},
		{"line2 too long", withAddress("line2", ptr(`"`+strings.Repeat("l", 201)+`"`)), 422, "invalid_field", "shipping_address.line2"},
		{"city missing", withAddress("city", nil), 422, "missing_field", "shipping_address.city"},
		{"city control char", withAddress("city", ptr(`"Ber\u0000lin"`)), 422, "invalid_field", "shipping_address.city"},
		{"postal code missing", withAddress("postal_code", nil), 422, "missing_field", "shipping_address.postal_code"},
		{"postal code charset", withAddress("postal_code", ptr(`"10117/B"`)), 422, "invalid_field", "shipping_address.postal_code"},
		{"postal code too long", withAddress("postal_code", ptr(`"12345678901234567"`)), 422, "invalid_field", "shipping_address.postal_code"},
		{"country missing", withAddress("country", nil), 422, "missing_field", "shipping_address.country"},
		{"country alpha-3", withAddress("country", ptr(`"DEU"`)), 422, "invalid_field", "shipping_address.country"},
		{"country unknown", withAddress("country", ptr(`"ZZ"`)), 422, "invalid_field", "shipping_address.country"},

		// Strict decoding reaches into the address.
		{"unknown address field", withAddress("state", ptr(`"BE"`)), 400, "unknown_field", "state"},
		{"postal code as number", withAddress("postal_code", ptr(`10117`)), 400, "invalid_type", "shipping_address.postal_code"},
		{"address as string", with("shipping_address", `"Unter den Linden 1, Berlin"`), 400, "invalid_type", "shipping_address"},
	}
	b.requireNothingWrittenAtEnd(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := b.post(t, tc.body)
			requireRejected(t, resp, tc.status, tc.code, tc.field)
		})
	}
}

// The request fingerprint covers the address: the same key with another
// address is idempotency_key_reused; with the same one (country in another
// case) it replays.
func TestIdempotencyKeyWithShippingAddress(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	first := b.post(t, withAddress("", nil), "Idempotency-Key", "ship-1")
	require.Equal(t, http.StatusCreated, first.Status, "%s", first.Body)

	again := b.post(t, withAddress("country", ptr(`"DE"`)), "Idempotency-Key", "ship-1")
	require.Equal(t, http.StatusCreated, again.Status, "%s", again.Body)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.JSONEq(t, string(first.Body), string(again.Body))

	for _, body := range []string{withAddress("postal_code", ptr(`"10115"`)), withAddress("line2", nil), validBody} {
		resp := b.post(t, body, "Idempotency-Key", "ship-1")
		require.Equal(t, http.StatusUnprocessableEntity, resp.Status, "%s", resp.Body)
		var e errorBody
		require.NoError(t, json.Unmarshal(resp.Body, &e))
		require.Equal(t, "idempotency_key_reused", e.Error.Code)
	}
	require.Equal(t, rowCounts{Orders: 1, Events: 1, Keys: 1}, countRows(b.ctx, t, b.pool))
}
