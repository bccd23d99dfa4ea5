package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
)

// maxReconcileCalls bounds one reconciliation's walk of the provider's list:
// each call reads at most activities.DefaultReconcileListPages pages of 100
// PaymentIntents, so the walk covers 100,000 PaymentIntents created since
// the order's event before it gives up and says so. Beyond that the account
// is too busy for a list to answer; an operator must look.
const maxReconcileCalls = 100

// listClockMargin widens the list's upper bound: the provider's clock may be
// ahead of the worker's, and a charge it stamped "later" than our now must
// still be found.
const listClockMargin = 10 * time.Minute

// reconcileAll asks ReconcilePayment until its answer rests on the provider's
// complete record. bounded (ChangeTimeEdges) walks the list in bounded calls,
// each continuing from the cursor the previous one returned, up to now (plus
// a margin); otherwise it is the single unbounded call of older runs.
//
// A walk that needs more than [maxReconcileCalls] calls fails with a
// non-retryable PaymentOutcomeUnknown error: nothing is known, so nothing
// may be decided.
func reconcileAll(ctx workflow.Context, bounded bool, in activities.ReconcileInput) (activities.ReconcileResult, error) {
	if bounded {
		in.ListPages = activities.DefaultReconcileListPages
		in.ListUntil = workflow.Now(ctx).Add(listClockMargin)
	}
	for call := 1; ; call++ {
		var rec activities.ReconcileResult
		err := workflow.ExecuteActivity(reconcileOptions(ctx), a.ReconcilePayment, in).Get(ctx, &rec)
		if err != nil || !bounded || !rec.Incomplete {
			return rec, err
		}
		if call >= maxReconcileCalls {
			return rec, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("reconciling the charge of event %s: %d list calls (%d pages each) did not reach the event's time; the provider's record is too long to read, check the PaymentIntents with metadata event_id=%s by hand",
					in.Charge.EventID, call, in.ListPages, in.Charge.EventID),
				activities.ErrTypePaymentOutcomeUnknown, nil)
		}
		in.ListCursor = rec.ListCursor
	}
}
