package providersim

import "time"

// paymentMethodJSON is Stripe's payment_method object for a test card.
type paymentMethodJSON struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	BillingDetails map[string]any    `json:"billing_details"`
	Card           cardJSON          `json:"card"`
	Created        int64             `json:"created"`
	Customer       *string           `json:"customer"`
	Livemode       bool              `json:"livemode"`
	Metadata       map[string]string `json:"metadata"`
	Type           string            `json:"type"`
}

// cardJSON is a payment method's card hash, which a charge repeats as its
// payment_method_details.card.
type cardJSON struct {
	Brand    string `json:"brand"`
	Country  string `json:"country"`
	ExpMonth int    `json:"exp_month"`
	ExpYear  int    `json:"exp_year"`
	Funding  string `json:"funding"`
	Last4    string `json:"last4"`
}

// cardJSON renders the test card. Test tokens carry no expiry date, so the
// simulator gives one that is always in the future of the card's creation:
// December, three years on.
func (pm *paymentMethod) cardJSON() cardJSON {
	return cardJSON{
		Brand: pm.card.brand, Country: pm.card.country, Funding: pm.card.funding, Last4: pm.card.last4,
		ExpMonth: 12, ExpYear: time.Unix(pm.created, 0).UTC().Year() + 3,
	}
}

// json renders pm as a decline reports it: in the 402's error and in the
// PaymentIntent's last_payment_error.
func (pm *paymentMethod) json() *paymentMethodJSON {
	return &paymentMethodJSON{
		ID:             pm.id,
		Object:         "payment_method",
		BillingDetails: emptyBillingDetails(),
		Card:           pm.cardJSON(),
		Created:        pm.created,
		Metadata:       map[string]string{},
		Type:           "card",
	}
}

// emptyBillingDetails is billing_details of a test card: nothing collected.
func emptyBillingDetails() map[string]any {
	return map[string]any{
		"address": map[string]any{"city": nil, "country": nil, "line1": nil, "line2": nil, "postal_code": nil, "state": nil},
		"email":   nil, "name": nil, "phone": nil,
	}
}
