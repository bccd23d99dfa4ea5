package orders

import (
	"encoding/json"
	"errors"
	"fmt"
)

// AggregateType is the outbox aggregate type of every order event; the
// aggregate ID is the order's id as text.
const AggregateType = "order"

// Event types an order emits.
const (
	EventOrderCreated   = "OrderCreated"
	EventOrderCancelled = "OrderCancelled"
)

// Schema versions of the OrderCreated payload. The order service writes the
// lowest version that can carry the order (see [EncodeOrderCreated]), so
// workers and consumers that predate a version keep receiving only what they
// understand; [DecodeOrderCreated] reads every version. docs/schema-evolution.md
// says how to add one.
const (
	// OrderCreatedV1 is an order without a shipping address.
	OrderCreatedV1 = 1
	// OrderCreatedV2 is v1 plus a mandatory shipping_address.
	OrderCreatedV2 = 2
	// OrderCreatedLatest is the newest version this build reads and writes.
	OrderCreatedLatest = OrderCreatedV2
	// OrderCreatedVersion is the version of an OrderCreated without a
	// shipping address, [OrderCreatedV1]: what every order had before v2.
	OrderCreatedVersion = OrderCreatedV1
)

// OrderCancelledVersion is the only schema version of OrderCancelled.
const OrderCancelledVersion = 1

// Item is one line of an order. Amounts are in the currency's minor unit.
type Item struct {
	SKU        string `json:"sku"`
	Quantity   int64  `json:"quantity"`
	UnitAmount int64  `json:"unit_amount"`
}

// OrderCreated is an OrderCreated event in its newest in-memory shape, which
// every schema version upcasts to ([DecodeOrderCreated]). The wire format of
// each version is frozen in its own type in upcast.go; marshalled with a nil
// ShippingAddress this struct happens to be exactly the v1 JSON, which
// producers and tests written before v2 rely on.
type OrderCreated struct {
	OrderID       string `json:"order_id"`
	CustomerEmail string `json:"customer_email"`
	Currency      string `json:"currency"`
	PaymentMethod string `json:"payment_method"`
	// Amount is the order total in minor units, computed by the server.
	Amount int64  `json:"amount"`
	Items  []Item `json:"items"`
	// ShippingAddress is nil for an order without one (every v1 event).
	ShippingAddress *ShippingAddress `json:"shipping_address,omitempty"`
}

// OrderCancelled is the payload of an OrderCancelled event (schema version 1).
type OrderCancelled struct {
	OrderID string `json:"order_id"`
	// CreatedEventID is the event_id of the order's OrderCreated event, which
	// is also the workflow ID of the payment saga the cancel must stop or
	// compensate.
	CreatedEventID string `json:"created_event_id"`
	Reason         string `json:"reason,omitempty"`
}

// ErrInvalidPayload is wrapped by payload validation errors: such an event can
// never succeed and is quarantined by the relay at once.
var ErrInvalidPayload = errors.New("invalid event payload")

// DecodeOrderCancelled parses and validates an OrderCancelled payload of the
// given schema version.
func DecodeOrderCancelled(version int, payload []byte) (OrderCancelled, error) {
	var p OrderCancelled
	if version != OrderCancelledVersion {
		return p, fmt.Errorf("%w: OrderCancelled schema version %d is not supported", ErrInvalidPayload, version)
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return p, fmt.Errorf("%w: OrderCancelled: %v", ErrInvalidPayload, err)
	}
	if p.OrderID == "" || p.CreatedEventID == "" {
		return p, fmt.Errorf("%w: OrderCancelled: missing order_id or created_event_id", ErrInvalidPayload)
	}
	return p, nil
}
