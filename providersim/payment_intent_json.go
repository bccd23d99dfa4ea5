package providersim

import "slices"

// paymentIntentJSON is Stripe's payment_intent object, every field that
// stripe-go's PaymentIntent decodes present (null where Stripe sends null).
type paymentIntentJSON struct {
	ID                                string                       `json:"id"`
	Object                            string                       `json:"object"`
	Amount                            int64                        `json:"amount"`
	AmountCapturable                  int64                        `json:"amount_capturable"`
	AmountDetails                     map[string]any               `json:"amount_details"`
	AmountReceived                    int64                        `json:"amount_received"`
	Application                       *string                      `json:"application"`
	ApplicationFeeAmount              *int64                       `json:"application_fee_amount"`
	AutomaticPaymentMethods           *automaticPaymentMethodsJSON `json:"automatic_payment_methods"`
	CanceledAt                        *int64                       `json:"canceled_at"`
	CancellationReason                *string                      `json:"cancellation_reason"`
	CaptureMethod                     string                       `json:"capture_method"`
	ClientSecret                      string                       `json:"client_secret"`
	ConfirmationMethod                string                       `json:"confirmation_method"`
	Created                           int64                        `json:"created"`
	Currency                          string                       `json:"currency"`
	Customer                          *string                      `json:"customer"`
	Description                       *string                      `json:"description"`
	Invoice                           *string                      `json:"invoice"`
	LastPaymentError                  *stripeError                 `json:"last_payment_error"`
	LatestCharge                      any                          `json:"latest_charge"` // null, an id, or the charge when expanded
	Livemode                          bool                         `json:"livemode"`
	Metadata                          map[string]string            `json:"metadata"`
	NextAction                        any                          `json:"next_action"`
	OnBehalfOf                        *string                      `json:"on_behalf_of"`
	PaymentMethod                     *string                      `json:"payment_method"`
	PaymentMethodConfigurationDetails any                          `json:"payment_method_configuration_details"`
	PaymentMethodOptions              map[string]any               `json:"payment_method_options"`
	PaymentMethodTypes                []string                     `json:"payment_method_types"`
	Processing                        any                          `json:"processing"`
	ReceiptEmail                      *string                      `json:"receipt_email"`
	Review                            *string                      `json:"review"`
	SetupFutureUsage                  *string                      `json:"setup_future_usage"`
	Shipping                          any                          `json:"shipping"`
	Source                            *string                      `json:"source"`
	StatementDescriptor               *string                      `json:"statement_descriptor"`
	StatementDescriptorSuffix         *string                      `json:"statement_descriptor_suffix"`
	Status                            string                       `json:"status"`
	TransferData                      any                          `json:"transfer_data"`
	TransferGroup                     *string                      `json:"transfer_group"`
}

// automaticPaymentMethodsJSON is the automatic_payment_methods hash. The
// record keeps it in its wire shape because the simulator only echoes what
// the create sent.
type automaticPaymentMethodsJSON struct {
	AllowRedirects string `json:"allow_redirects,omitempty"`
	Enabled        bool   `json:"enabled"`
}

// paymentIntentJSON renders pi. It is a store method because expanding
// latest_charge reads the charge from the store; expand holds per-object
// names (a list's "data.latest_charge" goes through trimExpand first).
func (st *store) paymentIntentJSON(pi *paymentIntent, expand []string) *paymentIntentJSON {
	out := &paymentIntentJSON{
		ID:                        pi.id,
		Object:                    "payment_intent",
		Amount:                    pi.amount,
		AmountDetails:             map[string]any{"tip": map[string]any{}},
		AmountReceived:            pi.amountReceived,
		AutomaticPaymentMethods:   pi.automaticPaymentMethods,
		CaptureMethod:             "automatic",
		ClientSecret:              pi.clientSecret,
		ConfirmationMethod:        "automatic",
		Created:                   pi.pos.created,
		Currency:                  pi.currency,
		Customer:                  nullable(pi.customer),
		Description:               nullable(pi.description),
		LastPaymentError:          pi.lastPaymentError,
		Metadata:                  copyMap(pi.metadata),
		PaymentMethod:             nullable(pi.paymentMethod),
		PaymentMethodOptions:      map[string]any{"card": map[string]any{"installments": nil, "mandate_options": nil, "network": nil, "request_three_d_secure": "automatic"}},
		PaymentMethodTypes:        pi.paymentMethodTypes,
		ReceiptEmail:              nullable(pi.receiptEmail),
		StatementDescriptor:       nullable(pi.statementDescriptor),
		StatementDescriptorSuffix: nullable(pi.statementDescriptorSfx),
		Status:                    pi.status,
	}
	if pi.canceledAt != 0 {
		out.CanceledAt = &pi.canceledAt
		out.CancellationReason = nullable(pi.cancellationReason)
	}
	if pi.status == statusRequiresAction {
		out.NextAction = nextAction(pi, st.paymentMethods[pi.paymentMethod])
	}
	if pi.latestCharge != "" {
		out.LatestCharge = pi.latestCharge
		if slices.Contains(expand, "latest_charge") {
			out.LatestCharge = st.chargeJSON(st.charges[pi.latestCharge])
		}
	}
	return out
}

// nextAction is Stripe's next_action of a PaymentIntent waiting for 3-D
// Secure after a server-side confirmation without return_url: use_stripe_sdk,
// which Stripe.js's handleNextAction runs in the customer's browser. Its
// inner hash is Stripe's: the 3DS1 redirect (three_d_secure_redirect with
// the hooks.stripe.com page and the source) or the 3DS2 fingerprint
// (stripe_3ds2_fingerprint). The simulator's customer is a test calling
// /_sim/payment_intents/{id}/authenticate, so the URLs lead nowhere.
func nextAction(pi *paymentIntent, pm *paymentMethod) map[string]any {
	source := "src_" + pi.id[len("pi_"):]
	sdk := map[string]any{
		"type":      "three_d_secure_redirect",
		"stripe_js": "https://hooks.stripe.com/redirect/authenticate/" + source + "?client_secret=" + pi.clientSecret,
		"source":    source,
	}
	if pm != nil && pm.card.threeDS2 {
		sdk = map[string]any{
			"type":                    "stripe_3ds2_fingerprint",
			"merchant":                "acct_providersim",
			"three_d_secure_2_source": source,
			"directory_server_name":   pm.card.brand,
			"server_transaction_id":   "sim-" + pi.id[len("pi_"):],
			"three_ds_method_url":     "",
			"three_ds_optimizations":  "",
			"directory_server_encryption": map[string]any{
				"directory_server_id": "A000000003", "algorithm": "RSA", "certificate": "", "root_certificate_authorities": []string{},
			},
			"one_click_authn": nil,
		}
	}
	return map[string]any{"type": "use_stripe_sdk", "use_stripe_sdk": sdk}
}
