package providersim

// testCard is what one of Stripe's test payment methods stands for.
type testCard struct {
	brand, last4, funding, country string
	// declineCode is set for cards that are always declined.
	declineCode string
	// flow is how a confirmation of the card goes when it is not
	// immediate: flowAuthentication waits for 3-D Secure (requires_action),
	// flowProcessing settles later (processing); see sim_payments.go.
	flow string
	// threeDS2: the authentication is 3-D Secure 2 (next_action
	// stripe_3ds2_fingerprint) rather than the 3DS1 redirect.
	threeDS2 bool
}

// The confirmations that do not end at once.
const (
	flowAuthentication = "authentication"
	flowProcessing     = "processing"
)

// testPaymentMethods are the test-mode tokens the simulator knows, with the
// outcome Stripe documents for each (https://docs.stripe.com/testing).
// Stripe turns each token into a fresh pm_ object when it is used.
var testPaymentMethods = map[string]testCard{
	"pm_card_visa":                            {brand: "visa", last4: "4242", funding: "credit", country: "US"},
	"pm_card_mastercard":                      {brand: "mastercard", last4: "4444", funding: "credit", country: "US"},
	"pm_card_chargeDeclined":                  {brand: "visa", last4: "0002", funding: "credit", country: "US", declineCode: "generic_decline"},
	"pm_card_chargeDeclinedInsufficientFunds": {brand: "visa", last4: "9995", funding: "credit", country: "US", declineCode: "insufficient_funds"},
	// pm_card_authenticationRequired is Stripe's 3-D Secure card: the
	// confirmation answers requires_action and waits for the customer,
	// whom a test plays with POST /_sim/payment_intents/{id}/authenticate.
	"pm_card_authenticationRequired": {brand: "visa", last4: "3184", funding: "credit", country: "FR", flow: flowAuthentication},
	// pm_card_threeDSecure2Required is Stripe's 3-D Secure 2 card: the same
	// wait, with the 3DS2 fingerprint as its next_action.
	"pm_card_threeDSecure2Required": {brand: "visa", last4: "3220", funding: "credit", country: "US", flow: flowAuthentication, threeDS2: true},
	// pm_sim_processing is the simulator's own token (Stripe has none for
	// cards): a payment that stays processing, the way bank debits do,
	// until POST /_sim/payment_intents/{id}/settle ends it.
	"pm_sim_processing": {brand: "visa", last4: "0077", funding: "debit", country: "DE", flow: flowProcessing},
}

// declineMessages are Stripe's customer-facing messages per decline code.
var declineMessages = map[string]string{
	"generic_decline":    "Your card was declined.",
	"insufficient_funds": "Your card has insufficient funds.",
}

// paymentMethod is a pm_ object made from a test token.
type paymentMethod struct {
	id      string
	card    testCard
	created int64
}
