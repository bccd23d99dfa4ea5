package providersim

// charge is the charge a confirmation made; refunds draw on it.
type charge struct {
	id             string
	created        int64
	amount         int64
	amountRefunded int64
	currency       string
	status         string // succeeded or failed
	paymentIntent  string
	paymentMethod  *paymentMethod
	declineCode    string
}
