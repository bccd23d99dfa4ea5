package activities

// Idempotency keys sent to providers are derived from an outbox event id and
// the step, never generated: every retry of an activity, every replay of a
// workflow and every duplicate delivery of the event computes the same key,
// which is what lets the provider store the effect once (docs/reference.md).
const keyPrefix = "outflow:"

// ChargeKey is the idempotency key of the charge an OrderCreated event makes.
func ChargeKey(createdEventID string) string {
	return keyPrefix + createdEventID + ":charge"
}

// RefundKey is the idempotency key of the refund that compensates the charge
// of the OrderCreated event createdEventID.
//
// It is derived from the charging event, not from the event that asks for
// the refund, on purpose: a charge is refunded at most once and in full, so
// every path that compensates it (the OrderCancelled workflow, the saga's own
// compensation when it is cancelled, an operator's reset) converges on one
// key, and the provider turns a second attempt into a replay instead of a
// second refund.
func RefundKey(createdEventID string) string {
	return keyPrefix + createdEventID + ":refund"
}

// CancelPaymentKey is the idempotency key of the cancel of the PaymentIntent
// the OrderCreated event createdEventID made, when its 3-D Secure
// authentication was not completed in time.
func CancelPaymentKey(createdEventID string) string {
	return keyPrefix + createdEventID + ":cancel-payment"
}

// EmailKey is the idempotency key of the email of the given kind that event
// eventID sends: one email of each kind per event.
func EmailKey(eventID string, kind EmailKind) string {
	return keyPrefix + eventID + ":email:" + string(kind)
}

// ReserveKey is the Idempotency-Key of the stock reservation the saga of
// the OrderCreated event createdEventID asks the inventory for.
func ReserveKey(createdEventID string) string {
	return keyPrefix + createdEventID + ":reserve"
}

// ReleaseKey is the Idempotency-Key of the release of that reservation.
// Like [RefundKey] it derives from the reserving event, not from the event
// that asks for the release: the saga (a declined charge, a missing answer)
// and the cancel workflow send the same request, and the inventory answers
// the second from the first.
func ReleaseKey(createdEventID string) string {
	return keyPrefix + createdEventID + ":release"
}
