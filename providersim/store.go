package providersim

// store is the simulator's whole state. It is guarded by Simulator.mu; every
// method expects the caller to hold it.
type store struct {
	seq int64

	paymentIntents map[string]*paymentIntent
	piOrder        []*paymentIntent // creation order, for the ledger
	paymentMethods map[string]*paymentMethod
	charges        map[string]*charge
	refunds        map[string]*refund
	refundOrder    []*refund
	emails         []*email
	disputes       []*dispute

	// webhooks are the deliveries of the webhook events, in the order
	// they were made; webhookHold pauses them (see webhooks.go).
	webhooks    []*webhookDelivery
	webhookHold bool

	idem   idempotencyStore
	faults faultQueue
	stats  stats
}

// newStore returns empty state, its maps made so that handlers can write to
// them without checking.
func newStore() *store {
	return &store{
		paymentIntents: map[string]*paymentIntent{},
		paymentMethods: map[string]*paymentMethod{},
		charges:        map[string]*charge{},
		refunds:        map[string]*refund{},
		idem:           newIdempotencyStore(),
		stats:          newStats(),
	}
}

// nextSeq orders objects created within the same second, which Stripe's
// second-resolution created timestamps cannot.
func (st *store) nextSeq() int64 {
	st.seq++
	return st.seq
}
