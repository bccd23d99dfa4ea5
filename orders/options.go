package orders

import (
	"context"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/failpoints"
)

// Option configures one of the order service's writes: those that run
// their own transaction ([CreateOrder], [CreateOrderIdempotent],
// [CancelOrder]) take every option; the ...Tx forms, which run in the
// caller's transaction, take options too but only [WithEnqueuer] applies
// to them (the caller commits, so it owns its failpoints).
type Option func(*options)

type options struct {
	failpoints *failpoints.Set
	enqueuer   *outbox.Enqueuer
}

// WithFailpoints injects faults at orders.before_commit (the order and its
// event written, the transaction not yet committed). Without it, or with
// nil, none is injected: the order API's main passes the set it read from
// OUTFLOW_FAILPOINTS.
func WithFailpoints(s *failpoints.Set) Option {
	return func(o *options) { o.failpoints = s }
}

// WithEnqueuer writes the order's events through q (its payload limit, say).
// Without it, or with nil, events go where outbox.Enqueue writes them:
// where the database's recorded relay source says.
func WithEnqueuer(q *outbox.Enqueuer) Option {
	return func(o *options) { o.enqueuer = q }
}

func collect(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// beforeCommit runs the orders.before_commit failpoint.
func (o options) beforeCommit(ctx context.Context) error {
	return o.failpoints.Inject(ctx, failpoints.OrdersBeforeCommit)
}
