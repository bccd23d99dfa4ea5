package orders

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The wire shapes of OrderCreated, one type per schema version. A released
// version is frozen: its events sit in the outbox, in Temporal histories and
// in replays for as long as retention keeps them, so a change is a new
// version with its own type, never an edit here.

// orderCreatedV1 is schema version 1.
type orderCreatedV1 struct {
	OrderID       string `json:"order_id"`
	CustomerEmail string `json:"customer_email"`
	Currency      string `json:"currency"`
	PaymentMethod string `json:"payment_method"`
	Amount        int64  `json:"amount"`
	Items         []Item `json:"items"`
}

// orderCreatedV2 is schema version 2: version 1 plus a mandatory shipping
// address.
type orderCreatedV2 struct {
	orderCreatedV1
	ShippingAddress *shippingAddressV2 `json:"shipping_address"`
}

// shippingAddressV2 is the address as version 2 writes it.
type shippingAddressV2 struct {
	Name       string `json:"name"`
	Line1      string `json:"line1"`
	Line2      string `json:"line2,omitempty"`
	City       string `json:"city"`
	PostalCode string `json:"postal_code"`
	Country    string `json:"country"`
}

// EncodeOrderCreated returns the schema version and wire payload of e: the
// lowest version that carries all of it, so an order without a shipping
// address is still a v1 event that every worker understands.
func EncodeOrderCreated(e OrderCreated) (version int, payload any) {
	v1 := orderCreatedV1{
		OrderID: e.OrderID, CustomerEmail: e.CustomerEmail, Currency: e.Currency,
		PaymentMethod: e.PaymentMethod, Amount: e.Amount, Items: e.Items,
	}
	if e.ShippingAddress == nil {
		return OrderCreatedV1, v1
	}
	a := shippingAddressV2(*e.ShippingAddress)
	return OrderCreatedV2, orderCreatedV2{orderCreatedV1: v1, ShippingAddress: &a}
}

// DecodeOrderCreated parses an OrderCreated payload of any known schema
// version, checks it and upcasts it to the newest in-memory shape: a v1
// event becomes an [OrderCreated] without a shipping address. An unknown
// version or a malformed payload is an error wrapping [ErrInvalidPayload],
// which the relay quarantines instead of starting a workflow. Decoding is
// tolerant of unknown fields (a reader ignores what it does not need) and
// deterministic, so workflows may call it.
func DecodeOrderCreated(version int, payload []byte) (OrderCreated, error) {
	switch version {
	case OrderCreatedV1:
		var p orderCreatedV1
		if err := json.Unmarshal(payload, &p); err != nil {
			return OrderCreated{}, fmt.Errorf("%w: OrderCreated v1: %v", ErrInvalidPayload, err)
		}
		if err := p.check(nil); err != nil {
			return OrderCreated{}, fmt.Errorf("%w: OrderCreated v1: %v", ErrInvalidPayload, err)
		}
		return p.upcast(), nil
	case OrderCreatedV2:
		var p orderCreatedV2
		if err := json.Unmarshal(payload, &p); err != nil {
			return OrderCreated{}, fmt.Errorf("%w: OrderCreated v2: %v", ErrInvalidPayload, err)
		}
		if err := p.check(); err != nil {
			return OrderCreated{}, fmt.Errorf("%w: OrderCreated v2: %v", ErrInvalidPayload, err)
		}
		return p.upcast(), nil
	}
	return OrderCreated{}, fmt.Errorf("%w: OrderCreated schema version %d is not supported (this build reads 1 to %d); "+
		"deploy workers that read it before producers write it", ErrInvalidPayload, version, OrderCreatedLatest)
}

// check reports the missing or invalid fields of v1, plus those of a later
// version's extension.
func (p orderCreatedV1) check(missing []string) error {
	var own []string
	if p.OrderID == "" {
		own = append(own, "order_id")
	}
	if p.CustomerEmail == "" {
		own = append(own, "customer_email")
	}
	if p.Currency == "" {
		own = append(own, "currency")
	}
	if p.PaymentMethod == "" {
		own = append(own, "payment_method")
	}
	if p.Amount <= 0 {
		own = append(own, "amount")
	}
	if all := append(own, missing...); len(all) > 0 {
		return fmt.Errorf("missing or invalid %s", strings.Join(all, ", "))
	}
	return nil
}

func (p orderCreatedV1) upcast() OrderCreated {
	return OrderCreated{
		OrderID: p.OrderID, CustomerEmail: p.CustomerEmail, Currency: p.Currency,
		PaymentMethod: p.PaymentMethod, Amount: p.Amount, Items: p.Items,
	}
}

// check requires the fields a label cannot do without. It deliberately does
// not re-run the API's full validation: rules may tighten later, and an event
// that was valid when written must stay processable.
func (p orderCreatedV2) check() error {
	a := p.ShippingAddress
	if a == nil {
		return p.orderCreatedV1.check([]string{"shipping_address"})
	}
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"name", a.Name}, {"line1", a.Line1}, {"city", a.City}, {"postal_code", a.PostalCode}, {"country", a.Country},
	} {
		if f.value == "" {
			missing = append(missing, "shipping_address."+f.name)
		}
	}
	return p.orderCreatedV1.check(missing)
}

func (p orderCreatedV2) upcast() OrderCreated {
	e := p.orderCreatedV1.upcast()
	a := ShippingAddress(*p.ShippingAddress)
	e.ShippingAddress = &a
	return e
}
