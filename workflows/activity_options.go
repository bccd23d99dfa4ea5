package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
)

// a is the typed nil pointer workflows call activities through: the method
// value names the activity, no string can drift from the registration.
var a *activities.Activities

// Every activity's timeouts and retry policy are explicit: the defaults
// (unlimited retries, no schedule-to-close) are wrong for calls whose
// idempotency keys expire.

// ChargeWindow bounds every use of a charge's idempotency key: no charge
// attempt starts later than this after the first one. The provider forgets a
// key after 24 hours; a request sent after that under the "same" key is a new
// charge, so retrying past it could charge the customer twice. The window is
// the reconciliation replay window, which keeps an hour of margin.
const ChargeWindow = activities.ReplayWindow

// maxChargeRounds bounds charge → reconcile("not charged") → charge loops. A
// provider that keeps losing our requests but never records them is an
// outage an operator must see, not something to hammer for a day.
const maxChargeRounds = 5

// providerCallTimeout is one provider request (the HTTP client's 20 s
// timeout) plus margin; a worker lost mid-call is noticed after it.
const providerCallTimeout = 30 * time.Second

// chargeOptions: a single attempt's failure is retried by Temporal only when
// it says nothing about the charge (worker lost, credentials). Every answer
// that matters — declined, rejected, outcome unknown, key conflict — goes back
// to the workflow, which reconciles before charging again. scheduleToClose is
// the time left in [ChargeWindow], so even Temporal's own retries stay
// inside the key's lifetime.
func chargeOptions(ctx workflow.Context, scheduleToClose time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    providerCallTimeout,
		ScheduleToCloseTimeout: min(scheduleToClose, time.Hour),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			NonRetryableErrorTypes: []string{
				activities.ErrTypePaymentDeclined,
				activities.ErrTypePaymentOutcomeUnknown,
				activities.ErrTypePaymentIdempotencyConflict,
				activities.ErrTypePaymentRejected,
			},
		},
	})
}

// reconcileOptions: reconciliation must eventually answer, and it never
// charges twice whenever it runs (it switches from replay to search when the
// key's lifetime is over), so it retries for two days, backing off to ten
// minutes between attempts during a provider outage.
func reconcileOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    time.Minute, // a search plus a paginated list
		ScheduleToCloseTimeout: 48 * time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    5 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    10 * time.Minute,
		},
	})
}

// cancelPaymentOptions: a cancel is idempotent by the PaymentIntent's state
// (and its key), so transient failures are retried for an hour; a refusal
// (PaymentRejected) is final and fails the run for an operator, because
// the PaymentIntent may still be completed by the customer.
func cancelPaymentOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    providerCallTimeout,
		ScheduleToCloseTimeout: time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			NonRetryableErrorTypes: []string{activities.ErrTypePaymentRejected},
		},
	})
}

// refundOptions: retries replay the refund's key, so they stay within 23 h
// for the same reason as charges; after that the refund is a compensation
// failure an operator handles (see the package doc).
func refundOptions(ctx workflow.Context) workflow.Context {
	return keyLifetimeOptions(ctx, activities.ErrTypeRefundRejected)
}

// emailOptions: email providers expire idempotency keys after 24 h too
// (Resend), so retries stop within 23 h; a rejected address is final.
func emailOptions(ctx workflow.Context) workflow.Context {
	return keyLifetimeOptions(ctx, activities.ErrTypeEmailRejected)
}

// keyLifetimeOptions are a provider call's whose retries replay its
// idempotency key: they stop within [activities.ReplayWindow], inside the
// key's lifetime, backing off to five minutes; the error type final ends
// them.
func keyLifetimeOptions(ctx workflow.Context, final string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    providerCallTimeout,
		ScheduleToCloseTimeout: activities.ReplayWindow,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        5 * time.Minute,
			NonRetryableErrorTypes: []string{final},
		},
	})
}

// projectOptions: the projection is our own database, so retrying is always
// safe (the inbox dedupes); a sequence gap waits for the earlier event for up
// to a day. An illegal transition or a missing order is a bug: final.
func projectOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 24 * time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			NonRetryableErrorTypes: []string{activities.ErrTypeIllegalTransition, activities.ErrTypeOrderNotFound},
		},
	})
}

// awaitSagaOptions: the saga can take as long as its charge window plus
// reconciliation, so waiting is bounded by three days; each attempt
// heartbeats and lasts at most ten minutes. After three days the saga cannot
// charge any more (its window is over), so the caller's fallback — asking the
// provider — is sound.
func awaitSagaOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    10 * time.Minute,
		HeartbeatTimeout:       time.Minute,
		ScheduleToCloseTimeout: 72 * time.Hour,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
		},
	})
}

// CheckHorizons checks the relation between the horizons fixed in code that
// the saga's safety rests on (docs/time-and-money.md): no charge attempt may
// start after the provider has forgotten the key it is sent under. The worker
// refuses to start when a change to one constant breaks it.
func CheckHorizons() error {
	if ChargeWindow >= activities.KeyLifetime {
		return fmt.Errorf("the charge window (%s) must be shorter than the provider's idempotency key lifetime (%s): a retry after the key expired would be a new charge",
			ChargeWindow, activities.KeyLifetime)
	}
	return nil
}
