package temporalpub_test

import (
	"encoding/json"
	"errors"
	"fmt"

	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// The tests' own order events, routes and workflow names: a service's
// wiring as a user of the library writes it, so the library's tests link
// nothing of outflow's order app.
const (
	orderAggregate         = "order"
	eventOrderCreated      = "OrderCreated"
	eventOrderCancelled    = "OrderCancelled"
	orderCreatedWorkflow   = "OrderCreatedWorkflow"
	orderCancelledWorkflow = "OrderCancelledWorkflow"
	// searchAttributeOrderID is the Keyword attribute the routes set; the
	// dev server registers it (devserver.SearchAttributes).
	searchAttributeOrderID = "OrderId"
)

// orderIDKey is the typed key of searchAttributeOrderID.
var orderIDKey = sdktemporal.NewSearchAttributeKeyKeyword(searchAttributeOrderID)

// errInvalidPayload is wrapped by the routes' Validate.
var errInvalidPayload = errors.New("invalid event payload")

type orderItem struct {
	SKU        string `json:"sku"`
	Quantity   int    `json:"quantity"`
	UnitAmount int64  `json:"unit_amount"`
}

type orderCreatedPayload struct {
	OrderID       string      `json:"order_id"`
	CustomerEmail string      `json:"customer_email"`
	Currency      string      `json:"currency"`
	PaymentMethod string      `json:"payment_method"`
	Amount        int64       `json:"amount"`
	Items         []orderItem `json:"items"`
}

type orderCancelledPayload struct {
	OrderID        string `json:"order_id"`
	CreatedEventID string `json:"created_event_id"`
	Reason         string `json:"reason"`
}

func decodeOrderCreated(version int, p []byte) (orderCreatedPayload, error) {
	var o orderCreatedPayload
	if version != 1 {
		return o, fmt.Errorf("%w: OrderCreated schema version %d", errInvalidPayload, version)
	}
	if err := json.Unmarshal(p, &o); err != nil || o.OrderID == "" || o.Amount <= 0 || len(o.Items) == 0 {
		return o, fmt.Errorf("%w: OrderCreated %s", errInvalidPayload, p)
	}
	return o, nil
}

func decodeOrderCancelled(version int, p []byte) (orderCancelledPayload, error) {
	var c orderCancelledPayload
	if version != 1 {
		return c, fmt.Errorf("%w: OrderCancelled schema version %d", errInvalidPayload, version)
	}
	if err := json.Unmarshal(p, &c); err != nil || c.OrderID == "" {
		return c, fmt.Errorf("%w: OrderCancelled %s", errInvalidPayload, p)
	}
	return c, nil
}

// orderRoutes routes the tests' two order events to their workflows, with
// the OrderId attribute and a summary naming the order (never its email or
// payment method).
func orderRoutes() temporalpub.Routes {
	orderID := func(e outbox.Event) sdktemporal.SearchAttributes {
		return sdktemporal.NewSearchAttributes(orderIDKey.ValueSet(e.AggregateID))
	}
	return temporalpub.Routes{
		eventOrderCreated: {
			Workflow:         orderCreatedWorkflow,
			Validate:         func(v int, p []byte) error { _, err := decodeOrderCreated(v, p); return err },
			SearchAttributes: orderID,
			Describe: func(e outbox.Event) (string, string) {
				o, err := decodeOrderCreated(e.SchemaVersion, e.Payload)
				if err != nil {
					return "Payment of order " + e.AggregateID, ""
				}
				total := fmt.Sprintf("%d.%02d %s", o.Amount/100, o.Amount%100, toUpper(o.Currency))
				return fmt.Sprintf("Payment of order %s: %s", o.OrderID, total),
					fmt.Sprintf("%d line(s)  \n**Event** %s", len(o.Items), e.ID)
			},
		},
		eventOrderCancelled: {
			Workflow:         orderCancelledWorkflow,
			Validate:         func(v int, p []byte) error { _, err := decodeOrderCancelled(v, p); return err },
			SearchAttributes: orderID,
			Describe: func(e outbox.Event) (string, string) {
				return "Cancel of order " + e.AggregateID, "**Event** " + e.ID.String()
			},
		},
	}
}

func toUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
