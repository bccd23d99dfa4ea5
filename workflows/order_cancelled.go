package workflows

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
)

// Stages of the cancel workflow.
const (
	StageStoppingSaga Stage = "stopping_saga"
	StageRefunding    Stage = "refunding"
	StageProjecting   Stage = "projecting"
	StageNotifying    Stage = "notifying"
	StageCancelled    Stage = "cancelled"
)

// CancelStatus is the cancel workflow's state for operators (query "status").
type CancelStatus struct {
	OrderID string `json:"order_id"`
	Stage   Stage  `json:"stage"`
	// SagaID is the workflow ID of the order's payment saga.
	SagaID          string `json:"saga_id"`
	SagaOutcome     string `json:"saga_outcome,omitempty"`
	Charged         bool   `json:"charged"`
	PaymentIntentID string `json:"payment_intent_id,omitempty"`
	RefundID        string `json:"refund_id,omitempty"`
	LastError       string `json:"last_error,omitempty"`
}

// CancelResult is the result of OrderCancelledWorkflow.
type CancelResult struct {
	OrderID         string `json:"order_id"`
	Charged         bool   `json:"charged"`
	PaymentIntentID string `json:"payment_intent_id,omitempty"`
	Refunded        bool   `json:"refunded"`
	RefundID        string `json:"refund_id,omitempty"`
	// StockReleased: the cancel released the order's stock reservation.
	StockReleased bool `json:"stock_released,omitempty"`
}

// OrderCancelledWorkflow cancels an order (workflow ID = the OrderCancelled
// event id): it stops the order's saga, waits for it to close, refunds the
// charge if there was one, projects cancelled and sends one cancellation
// email.
//
// Everything after decoding runs on a disconnected context. The cancel is a
// committed business fact; a Temporal cancel of this run (an operator's
// mistake) must not leave a charged order unrefunded, so it is not obeyed —
// terminate is the operator's deliberate way out.
func OrderCancelledWorkflow(ctx workflow.Context, in handoff.EventInput) (CancelResult, error) {
	if err := setOrderID(ctx, in.AggregateID); err != nil {
		return CancelResult{}, err
	}
	// Decoding JSON is deterministic; workflowcheck flags it only because
	// the runtime's allocator may start GC goroutines.
	p, err := orders.DecodeOrderCancelled(in.SchemaVersion, in.Payload) //workflowcheck:ignore
	if err != nil {
		return CancelResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidPayload", err)
	}
	st := &CancelStatus{OrderID: p.OrderID, SagaID: p.CreatedEventID, Stage: StageStoppingSaga}
	if err := workflow.SetQueryHandler(ctx, handoff.QueryStatus, func() (CancelStatus, error) { return *st, nil }); err != nil {
		return CancelResult{}, err
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	return cancelOrder(dctx, in, p, st)
}

func cancelOrder(ctx workflow.Context, in handoff.EventInput, p orders.OrderCancelled, st *CancelStatus) (CancelResult, error) {
	logger := workflow.GetLogger(ctx)
	res := CancelResult{OrderID: p.OrderID}
	// stage moves the cancel to x and writes the run's current details,
	// which the Temporal UI shows beside the start's summary (no personal
	// data; setting them records nothing in the history).
	stage := func(x Stage) {
		st.Stage = x
		workflow.SetCurrentDetails(ctx, cancelDetails(*st))
	}
	stage(StageStoppingSaga)
	edges := workflow.GetVersion(ctx, ChangeTimeEdges, workflow.DefaultVersion, 1) >= 1
	// failed ends the cancel on a step that failed for good. From
	// ChangeTimeEdges on every such end is a CompensationFailed: a cancel
	// that stops half-way leaves money or the order's state wrong, and must
	// reach an operator like a failed refund does.
	failed := func(err error, what string, amount int64) error {
		if !edges {
			return err
		}
		st.LastError = err.Error()
		stage(StageCompensationFailed)
		return compensationFailed(ctx, CompensationFailure{OrderID: p.OrderID, PaymentIntentID: res.PaymentIntentID, Amount: amount},
			fmt.Errorf("%s: %w", what, err))
	}

	// 1. Stop the saga. A saga that already closed is fine: its result says
	// what happened.
	err := workflow.SignalExternalWorkflow(ctx, p.CreatedEventID, "", handoff.SignalCancel,
		handoff.CancelRequest{CancelEventID: in.EventID, Reason: p.Reason}).Get(ctx, nil)
	var unknown *temporal.UnknownExternalWorkflowExecutionError
	switch {
	case errors.As(err, &unknown):
		logger.Info("saga already closed; reading its result", "order_id", p.OrderID, "saga_id", p.CreatedEventID)
	case err != nil:
		// Awaiting the saga below still decides; the signal only hurries it.
		logger.Warn("could not signal the saga", "order_id", p.OrderID, "saga_id", p.CreatedEventID, "error", err)
	}

	// 2. Learn whether money was taken, from the saga itself once closed.
	var aw activities.AwaitSagaResult
	if err := workflow.ExecuteActivity(awaitSagaOptions(ctx), a.AwaitSaga,
		activities.AwaitSagaInput{WorkflowID: p.CreatedEventID}).Get(ctx, &aw); err != nil {
		// The saga is still running after the whole wait (a provider outage
		// longer than its windows): whether it charged is unknown, so the
		// cancel cannot promise a net charge of zero. That is a failed
		// compensation, and it must reach an operator like one.
		st.LastError = err.Error()
		stage(StageCompensationFailed)
		return res, compensationFailed(ctx, CompensationFailure{OrderID: p.OrderID},
			fmt.Errorf("the payment saga %s did not finish while the cancel waited: %w", p.CreatedEventID, err))
	}
	amount, currency := aw.Result.Amount, aw.Result.Currency
	if aw.Found {
		st.SagaOutcome = string(aw.Result.Outcome)
		res.Charged, res.PaymentIntentID = aw.Result.Charged, aw.Result.PaymentIntentID
		res.Refunded, res.RefundID = aw.Result.Refunded, aw.Result.RefundID
	} else {
		// The saga failed, was terminated or is gone: it can no longer
		// charge (AwaitSaga only gives up after its charge window), so the
		// provider's record is the truth. The shared refund key makes a
		// refund the saga already made a replay, not a second refund.
		logger.Warn("saga ended without a result; asking the provider", "order_id", p.OrderID, "problem", aw.Problem)
		st.SagaOutcome = "unknown: " + aw.Problem
		// No FirstAttemptAt: a replay under the charge's key would make the
		// charge if it never happened. OccurredAt bounds the strongly
		// consistent list (search may lag): the OrderCreated event's id is a
		// UUIDv7, whose timestamp is that event's commit time, before any
		// charge of it.
		rec, err := reconcileAll(ctx, edges, activities.ReconcileInput{
			Charge:     activities.ChargeInput{EventID: p.CreatedEventID, OrderID: p.OrderID},
			OccurredAt: uuidTime(p.CreatedEventID),
		})
		if err != nil {
			return res, failed(err, "asking the provider whether the order was charged", 0)
		}
		currency = rec.Currency
		res.Charged, res.PaymentIntentID, amount = rec.Outcome == activities.Charged, rec.PaymentIntentID, rec.Amount
		// Close the saga's event in the order's sequence, as its stop would
		// have (a no-op if it got that far). Sequence 0: the order knows its
		// created event's sequence, even after cleanup deleted the event.
		if err := workflow.ExecuteActivity(projectOptions(ctx), a.ProjectOrder, activities.ProjectOrderInput{
			EventID: p.CreatedEventID, OrderID: p.OrderID, Step: activities.StepSagaStopped,
		}).Get(ctx, nil); err != nil {
			return res, failed(err, "closing the payment saga's event", amount)
		}
	}
	st.Charged, st.PaymentIntentID = res.Charged, res.PaymentIntentID

	// 3. Refund exactly once (the key is the charge's, whoever asks), then
	// 4. project cancelled, with the refund.
	c := cancellation{orderID: p.OrderID, eventID: in.EventID, sequence: in.Sequence,
		stage: stage}
	if res.Charged && !res.Refunded {
		c.refund = &activities.RefundInput{ChargeEventID: p.CreatedEventID, OrderID: p.OrderID,
			PaymentIntentID: res.PaymentIntentID, Amount: amount}
	}
	refundID, pr, err := refundThenProjectCancelled(ctx, c)
	var rerr errRefund
	if c.refund != nil && !errors.As(err, &rerr) {
		res.Refunded, res.RefundID = true, refundID
		st.RefundID = refundID
	}
	switch {
	case errors.As(err, &rerr):
		st.LastError = rerr.Error()
		stage(StageCompensationFailed)
		return res, compensationFailed(ctx, CompensationFailure{
			OrderID: p.OrderID, PaymentIntentID: res.PaymentIntentID, Amount: amount}, rerr.err)
	case err != nil:
		return res, failed(err, "projecting the order cancelled", amount)
	}

	// 5. One cancellation email (its key is the cancel event's).
	// The order is cancelled and its money back: give its stock back too.
	// A saga that asked for a reservation says so in its result. Otherwise
	// an earlier run of the saga may still have (a run that ended without
	// a result, or one whose successor found the order paid and confirmed
	// without reserving), so a worker with an inventory releases anyway
	// ([ChangeInventory]): a release of nothing is answered and leaves a
	// tombstone.
	release := aw.Found && aw.Result.StockReserved
	if !release && workflow.GetVersion(ctx, ChangeInventory, workflow.DefaultVersion, 1) >= 1 {
		inv, err := inventorySettings(ctx)
		if err != nil {
			return res, failed(err, "reading the worker's inventory settings", amount)
		}
		release = inv.Enabled
	}
	if release {
		stage(StageReleasingStock)
		if err := releaseReservation(ctx, p.CreatedEventID, p.OrderID, p.CreatedEventID); err != nil {
			st.LastError = err.Error()
			stage(StageCompensationFailed)
			return res, compensationFailed(ctx, CompensationFailure{Compensation: CompensationRelease,
				OrderID: p.OrderID, PaymentIntentID: res.PaymentIntentID, Amount: amount}, err)
		}
		res.StockReleased = true
	}

	stage(StageNotifying)
	if err := workflow.ExecuteActivity(emailOptions(ctx), a.SendEmail, activities.SendEmailInput{
		EventID: in.EventID, OrderID: p.OrderID, Kind: activities.EmailCancellation, To: pr.CustomerEmail,
		Amount: amount, Currency: currency, Refunded: res.Refunded,
	}).Get(ctx, nil); err != nil {
		return res, failed(err, "sending the cancellation email", amount)
	}
	stage(StageCancelled)
	return res, nil
}

// cancelDetails is a cancel's current details (Markdown): the stage, the
// saga it stopped and what happened to the money.
func cancelDetails(st CancelStatus) string {
	d := "**Stage** " + string(st.Stage) + "  \n**Saga** " + st.SagaID
	if st.SagaOutcome != "" {
		d += " (" + st.SagaOutcome + ")"
	}
	if st.Charged {
		d += "  \n**Charged** " + st.PaymentIntentID
	}
	if st.RefundID != "" {
		d += "  \n**Refunded** " + st.RefundID
	}
	return d
}

// uuidTime is the timestamp of a UUIDv7 (zero for anything else), read
// deterministically from the id itself.
func uuidTime(id string) time.Time {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 {
		return time.Time{}
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec).UTC()
}
