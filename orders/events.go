package orders

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// AggregateType is the outbox aggregate type of every order event; the
// aggregate ID is the order's id as text.
const AggregateType = "order"

// Event types an order emits.
const (
	EventOrderCreated   = "OrderCreated"
	EventOrderCancelled = "OrderCancelled"
)

// Payload schema versions written by this build.
const (
	OrderCreatedVersion   = 1
	OrderCancelledVersion = 1
)

// Item is one line of an order. Amounts are in the currency's minor unit.
type Item struct {
	SKU        string `json:"sku"`
	Quantity   int64  `json:"quantity"`
	UnitAmount int64  `json:"unit_amount"`
}

// OrderCreated is the payload of an OrderCreated event (schema version 1).
type OrderCreated struct {
	OrderID       string `json:"order_id"`
	CustomerEmail string `json:"customer_email"`
	Currency      string `json:"currency"`
	PaymentMethod string `json:"payment_method"`
	// Amount is the order total in minor units, computed by the server.
	Amount int64  `json:"amount"`
	Items  []Item `json:"items"`
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

// DecodeOrderCreated parses and validates an OrderCreated payload of the
// given schema version.
func DecodeOrderCreated(version int, payload []byte) (OrderCreated, error) {
	var p OrderCreated
	if version != OrderCreatedVersion {
		return p, fmt.Errorf("%w: OrderCreated schema version %d is not supported", ErrInvalidPayload, version)
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return p, fmt.Errorf("%w: OrderCreated: %v", ErrInvalidPayload, err)
	}
	var missing []string
	if p.OrderID == "" {
		missing = append(missing, "order_id")
	}
	if p.CustomerEmail == "" {
		missing = append(missing, "customer_email")
	}
	if p.Currency == "" {
		missing = append(missing, "currency")
	}
	if p.PaymentMethod == "" {
		missing = append(missing, "payment_method")
	}
	if p.Amount <= 0 {
		missing = append(missing, "amount")
	}
	if len(missing) > 0 {
		return p, fmt.Errorf("%w: OrderCreated: missing or invalid %s", ErrInvalidPayload, strings.Join(missing, ", "))
	}
	return p, nil
}

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
