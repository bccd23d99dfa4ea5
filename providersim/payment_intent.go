package providersim

// PaymentIntent statuses the simulator produces.
const (
	statusSucceeded             = "succeeded"
	statusRequiresPaymentMethod = "requires_payment_method"
	statusRequiresConfirmation  = "requires_confirmation"
	statusRequiresAction        = "requires_action"
	statusProcessing            = "processing"
	statusCanceled              = "canceled"
	statusPending               = "pending" // a charge not yet settled
)

// paymentIntent is the simulator's record of a PaymentIntent.
type paymentIntent struct {
	pos            position
	id             string
	clientSecret   string
	amount         int64
	amountReceived int64
	currency       string
	status         string
	metadata       map[string]string
	idempotencyKey string

	description, receiptEmail, customer         string
	statementDescriptor, statementDescriptorSfx string
	paymentMethod                               string // attached pm_ id; empty after a decline, as at Stripe
	paymentMethodTypes                          []string
	automaticPaymentMethods                     *automaticPaymentMethodsJSON
	latestCharge                                string
	lastPaymentError                            *stripeError
	// canceledAt (Unix seconds) and cancellationReason are set by a
	// cancel; the reason is empty when the cancel gave none.
	canceledAt         int64
	cancellationReason string
}
