package activities

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v76/client"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/inbox"
)

// Activities holds the clients the saga's activities use. The worker builds
// one with [NewFromEnv] and registers it once; workflows call its methods
// through a typed nil pointer, e.g. (*Activities)(nil).ChargePayment.
type Activities struct {
	// Stripe is the payment provider's client. Mandatory for the payment
	// activities. Its backend must have network retries off
	// (MaxNetworkRetries 0): Temporal owns retries, and a hidden retry inside
	// one attempt would blur which attempt's answer was lost.
	Stripe *client.API
	// Email sends transactional email. Mandatory for SendEmail.
	Email *EmailClient
	// Inventory is the inventory service's API (INVENTORY_URL). Optional:
	// without it the saga skips the stock step ([Activities.InventorySettings]).
	Inventory *InventoryClient
	// InventoryAnswerTimeout is how long the saga waits for the inventory's
	// answer signal. Optional: defaulted to [DefaultInventoryAnswerTimeout].
	InventoryAnswerTimeout time.Duration
	// AuthenticationTimeout is how long the saga waits for a customer to
	// complete 3-D Secure before it cancels the PaymentIntent. Optional:
	// defaulted to [DefaultAuthenticationTimeout].
	AuthenticationTimeout time.Duration
	// DB is outflow's database: the order projection, the order's state,
	// and the email inbox. Mandatory for ProjectOrder, GetOrderState and
	// SendEmail.
	DB *pgxpool.Pool
	// Temporal lets AwaitSaga read another workflow's result. Mandatory for
	// AwaitSaga.
	Temporal temporalclient.Client
	// Inbox keeps the projection's steps and the emails single, and counts
	// their duplicate deliveries (inbox_duplicates_total{consumer}).
	// Optional: defaulted to an inbox whose metric is registered nowhere.
	Inbox *inbox.Inbox
	// Metrics counts illegal transitions. Optional: defaulted to metrics
	// registered nowhere.
	Metrics *Metrics
	// Failpoints injects faults at the points of docs/reference.md.
	// Optional: nil injects none; the worker's main passes the set it read
	// from OUTFLOW_FAILPOINTS.
	Failpoints *failpoints.Set
	// Now is the clock that decides whether an idempotency key is still
	// within the provider's 24 h lifetime. Optional: defaulted to time.Now.
	Now func() time.Time
}

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Activities) metrics() *Metrics {
	if a.Metrics != nil {
		return a.Metrics
	}
	return defaultMetrics
}

func (a *Activities) inbox() *inbox.Inbox {
	if a.Inbox != nil {
		return a.Inbox
	}
	return defaultInbox
}

// defaultInbox backs an Activities without an Inbox, like defaultMetrics.
var defaultInbox = func() *inbox.Inbox {
	ib, err := inbox.New(nil) // fails only on a registry
	if err != nil {
		panic(err)
	}
	return ib
}()

// failpoint runs the named failpoint of a.Failpoints (nil: none).
func (a *Activities) failpoint(ctx context.Context, name string) error {
	return a.Failpoints.Inject(ctx, name)
}
