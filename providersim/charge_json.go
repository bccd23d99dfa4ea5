package providersim

// chargeJSON is Stripe's charge object, sent when latest_charge is expanded.
type chargeJSON struct {
	ID                   string            `json:"id"`
	Object               string            `json:"object"`
	Amount               int64             `json:"amount"`
	AmountCaptured       int64             `json:"amount_captured"`
	AmountRefunded       int64             `json:"amount_refunded"`
	BillingDetails       map[string]any    `json:"billing_details"`
	Captured             bool              `json:"captured"`
	Created              int64             `json:"created"`
	Currency             string            `json:"currency"`
	Disputed             bool              `json:"disputed"`
	FailureCode          *string           `json:"failure_code"`
	FailureMessage       *string           `json:"failure_message"`
	Livemode             bool              `json:"livemode"`
	Metadata             map[string]string `json:"metadata"`
	Outcome              map[string]any    `json:"outcome"`
	Paid                 bool              `json:"paid"`
	PaymentIntent        string            `json:"payment_intent"`
	PaymentMethod        string            `json:"payment_method"`
	PaymentMethodDetails map[string]any    `json:"payment_method_details"`
	Refunded             bool              `json:"refunded"`
	Status               string            `json:"status"`
}

// chargeJSON renders ch. A declined charge carries Stripe's failure fields
// and an issuer_declined outcome, so code that reads why a payment failed
// finds it where it would at Stripe.
func (st *store) chargeJSON(ch *charge) *chargeJSON {
	out := &chargeJSON{
		ID:                   ch.id,
		Object:               "charge",
		Amount:               ch.amount,
		AmountRefunded:       ch.amountRefunded,
		BillingDetails:       emptyBillingDetails(),
		Created:              ch.created,
		Currency:             ch.currency,
		Metadata:             map[string]string{},
		PaymentIntent:        ch.paymentIntent,
		PaymentMethod:        ch.paymentMethod.id,
		PaymentMethodDetails: map[string]any{"type": "card", "card": ch.paymentMethod.cardJSON()},
		Refunded:             ch.amount > 0 && ch.amountRefunded == ch.amount,
		Status:               ch.status,
	}
	if ch.status == statusSucceeded {
		out.AmountCaptured = ch.amount
		out.Captured = true
		out.Paid = true
		out.Outcome = map[string]any{
			"network_status": "approved_by_network", "reason": nil, "risk_level": "normal",
			"seller_message": "Payment complete.", "type": "authorized",
		}
	} else {
		out.FailureCode = nullable("card_declined")
		out.FailureMessage = nullable(declineMessages[ch.declineCode])
		out.Outcome = map[string]any{
			"network_status": "declined_by_network", "reason": ch.declineCode, "risk_level": "normal",
			"seller_message": "The bank did not return any further details with this decline.", "type": "issuer_declined",
		}
	}
	return out
}
