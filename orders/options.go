package orders

import (
	"context"

	"github.com/outflow/outflow/failpoints"
)

// Option configures one of the order service's writes that run their own
// transaction ([CreateOrder], [CreateOrderIdempotent], [CancelOrder]); the
// ...Tx forms run in the caller's transaction and take none.
type Option func(*options)

type options struct {
	failpoints *failpoints.Set
}

// WithFailpoints injects faults at orders.before_commit (the order and its
// event written, the transaction not yet committed). Without it, or with
// nil, none is injected: the order API's main passes the set it read from
// OUTFLOW_FAILPOINTS.
func WithFailpoints(s *failpoints.Set) Option {
	return func(o *options) { o.failpoints = s }
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
