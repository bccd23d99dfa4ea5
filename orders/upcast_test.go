package orders

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordedV1 is an OrderCreated v1 payload exactly as the code before v2
// wrote it: copied from the workflow input saved in
// workflows/testdata/order_created_confirmed.json.
const recordedV1 = `{"order_id":"862df78d-4d7e-49a3-a1f3-987f6787a0f4","customer_email":"ada@example.com","currency":"usd",` +
	`"payment_method":"pm_card_visa","amount":2500,"items":[{"sku":"SKU-1","quantity":2,"unit_amount":1250}]}`

// recordedV1FromJSONB is the same payload as the relay reads it back from the
// outbox's jsonb column (keys reordered, spaces added).
const recordedV1FromJSONB = `{"items": [{"sku": "SKU-1", "quantity": 2, "unit_amount": 1250}], "amount": 2500, ` +
	`"currency": "usd", "order_id": "862df78d-4d7e-49a3-a1f3-987f6787a0f4", "customer_email": "ada@example.com", ` +
	`"payment_method": "pm_card_visa"}`

const v2Payload = `{"order_id":"862df78d-4d7e-49a3-a1f3-987f6787a0f4","customer_email":"ada@example.com","currency":"usd",` +
	`"payment_method":"pm_card_visa","amount":2500,"items":[{"sku":"SKU-1","quantity":2,"unit_amount":1250}],` +
	`"shipping_address":{"name":"Ada Lovelace","line1":"12 St James's Square","line2":"Flat 3","city":"London","postal_code":"SW1Y 4JH","country":"GB"}}`

func recordedOrder() OrderCreated {
	return OrderCreated{
		OrderID: "862df78d-4d7e-49a3-a1f3-987f6787a0f4", CustomerEmail: "ada@example.com", Currency: "usd",
		PaymentMethod: "pm_card_visa", Amount: 2500, Items: []Item{{SKU: "SKU-1", Quantity: 2, UnitAmount: 1250}},
	}
}

func testAddress() *ShippingAddress {
	return &ShippingAddress{Name: "Ada Lovelace", Line1: "12 St James's Square", Line2: "Flat 3",
		City: "London", PostalCode: "SW1Y 4JH", Country: "GB"}
}

// Every known version decodes to the newest in-memory shape; anything the
// relay must quarantine is ErrInvalidPayload.
func TestDecodeOrderCreated(t *testing.T) {
	t.Parallel()
	withAddress := recordedOrder()
	withAddress.ShippingAddress = testAddress()
	cases := []struct {
		name    string
		version int
		payload string
		want    OrderCreated
		wantErr string // substring; "" means success
	}{
		{"v1 as the old code wrote it", 1, recordedV1, recordedOrder(), ""},
		{"v1 as read back from jsonb", 1, recordedV1FromJSONB, recordedOrder(), ""},
		{"v1 ignores fields it does not know", 1, recordedV1[:len(recordedV1)-1] + `,"gift_wrap":true}`, recordedOrder(), ""},
		{"v1 carrying an address keeps none", 1, v2Payload, recordedOrder(), ""},
		{"v2 with an address", 2, v2Payload, withAddress, ""},

		{"version 0", 0, recordedV1, OrderCreated{}, "schema version 0 is not supported"},
		{"version 3 from a newer producer", 3, v2Payload, OrderCreated{}, "schema version 3 is not supported"},
		{"v1 not JSON", 1, `{"order_id":`, OrderCreated{}, "OrderCreated v1"},
		{"v1 wrong type", 1, `{"amount":"2500"}`, OrderCreated{}, "OrderCreated v1"},
		{"v1 missing fields", 1, `{"order_id":"o","amount":0}`, OrderCreated{}, "customer_email, currency, payment_method, amount"},
		{"v2 without an address", 2, recordedV1, OrderCreated{}, "missing or invalid shipping_address"},
		{"v2 with a null address", 2, recordedV1[:len(recordedV1)-1] + `,"shipping_address":null}`, OrderCreated{}, "shipping_address"},
		{"v2 address missing fields", 2, recordedV1[:len(recordedV1)-1] + `,"shipping_address":{"name":"Ada","line2":"x"}}`,
			OrderCreated{}, "shipping_address.line1, shipping_address.city, shipping_address.postal_code, shipping_address.country"},
		{"v2 missing v1 fields too", 2, `{"shipping_address":{"name":"Ada"}}`, OrderCreated{}, "order_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeOrderCreated(tc.version, []byte(tc.payload))
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalidPayload)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// The producer writes the lowest version that carries the order, and what
// it writes decodes back to the same order.
func TestEncodeOrderCreated(t *testing.T) {
	t.Parallel()
	v1 := recordedOrder()
	version, payload := EncodeOrderCreated(v1)
	require.Equal(t, OrderCreatedV1, version, "an order without an address stays v1 for workers that predate v2")
	data, err := json.Marshal(payload)
	require.NoError(t, err)
	require.JSONEq(t, recordedV1, string(data), "v1 is byte-for-byte what the old code wrote")
	back, err := DecodeOrderCreated(version, data)
	require.NoError(t, err)
	require.Equal(t, v1, back)

	v2 := recordedOrder()
	v2.ShippingAddress = testAddress()
	version, payload = EncodeOrderCreated(v2)
	require.Equal(t, OrderCreatedV2, version)
	data, err = json.Marshal(payload)
	require.NoError(t, err)
	require.JSONEq(t, v2Payload, string(data))
	back, err = DecodeOrderCreated(version, data)
	require.NoError(t, err)
	require.Equal(t, v2, back)

	// Without line2 the key is left out, as the API's own JSON does.
	v2.ShippingAddress.Line2 = ""
	_, payload = EncodeOrderCreated(v2)
	data, err = json.Marshal(payload)
	require.NoError(t, err)
	require.NotContains(t, string(data), "line2")
}
