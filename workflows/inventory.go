package workflows

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/outbox/temporalpub/eventsignal"
)

// Stages of the saga's stock step ([ChangeInventory]).
const (
	StageReserving      Stage = "reserving_stock"
	StageAwaitingStock  Stage = "awaiting_stock"
	StageStockFailed    Stage = "stock_unavailable"
	StageReleasingStock Stage = "releasing_stock"
)

// Reasons of a saga that failed its order without charging
// (handoff.SagaResult.Reason).
const (
	// ReasonOutOfStock: the inventory rejected the reservation (StockRejected).
	ReasonOutOfStock = "out_of_stock"
	// ReasonStockNotConfirmed: the inventory's answer did not arrive within
	// InventorySettings.AnswerTimeout (or the reserve request failed for
	// good); the saga released whatever may be held.
	ReasonStockNotConfirmed = "stock_not_confirmed"
)

// inventoryCallTimeout is one inventory request (the HTTP client's 20 s
// timeout) plus margin.
const inventoryCallTimeout = 30 * time.Second

// inventoryReleaseWindow bounds the retries of a release before it is a
// compensation failure: long enough to ride out an inventory outage or
// deploy, short enough that an operator hears of stock held for a dead
// order the same day.
const inventoryReleaseWindow = time.Hour

// reserveOptions: transport failures and 5xx are retried under the same key
// (the inventory replays its first answer) for as long as the saga waits for
// the answer; a refusal (4xx) is final.
func reserveOptions(ctx workflow.Context, window time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    inventoryCallTimeout,
		ScheduleToCloseTimeout: window,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			NonRetryableErrorTypes: []string{activities.ErrTypeInventoryRefused},
		},
	})
}

// releaseOptions: like refunds, retried under the one key until
// [inventoryReleaseWindow]; a refusal is final. Either way the caller turns
// the failure into a compensation failure.
func releaseOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout:    inventoryCallTimeout,
		ScheduleToCloseTimeout: inventoryReleaseWindow,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        5 * time.Minute,
			NonRetryableErrorTypes: []string{activities.ErrTypeInventoryRefused},
		},
	})
}

// inventorySettings reads the worker's inventory configuration through a
// local activity, so the decision to run the stock step is recorded in the
// history and a replay, on whatever worker, takes it again.
func inventorySettings(ctx workflow.Context) (activities.InventorySettings, error) {
	var st activities.InventorySettings
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
	})
	err := workflow.ExecuteLocalActivity(lctx, a.InventorySettings).Get(ctx, &st)
	return st, err
}

// reserveStock is the saga's stock step ([ChangeInventory]): off for runs
// recorded before it and for workers without an inventory. It asks the
// inventory to reserve the order's items and waits for the answer signal,
// at most InventorySettings.AnswerTimeout. done reports that the run ends
// here with res: a cancel before the request, a rejection, or no answer (the
// last two fail the order; no answer also releases).
func (s *saga) reserveStock(ctx workflow.Context) (res handoff.SagaResult, done bool, err error) {
	if s.getVersion(ctx, ChangeInventory, workflow.DefaultVersion, 1) < 1 {
		return res, false, nil
	}
	inv, err := inventorySettings(ctx)
	if err != nil {
		return s.result(""), true, err
	}
	if !inv.Enabled {
		return res, false, nil
	}
	if s.pollCancel(ctx) {
		res, err := s.stop(ctx)
		return res, true, err
	}
	s.setStage(ctx, StageReserving)
	deadline := workflow.Now(ctx).Add(inv.AnswerTimeout)
	// From the request on, stock may be held: whoever ends the order
	// releases it (this saga, its compensation, or the cancel workflow).
	s.stockHeld = true
	items := make([]activities.InventoryItem, len(s.order.Items))
	for i, it := range s.order.Items {
		items[i] = activities.InventoryItem{SKU: it.SKU, Quantity: it.Quantity}
	}
	var ans activities.InventoryOutcome
	err = workflow.ExecuteActivity(s.settled(reserveOptions(ctx, inv.AnswerTimeout)), a.ReserveStock, activities.ReserveStockInput{
		EventID: s.in.EventID, OrderID: s.order.OrderID, WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, Items: items,
		CustomerEmail: s.order.CustomerEmail,
	}).Get(ctx, &ans)
	var answer activities.InventoryOutcome
	answered := false
	switch {
	case ctx.Err() != nil:
		return s.result(""), true, err // cancelled through Temporal: compensation takes over
	case err != nil:
		s.status.LastError = err.Error()
		workflow.GetLogger(ctx).Error("the inventory did not take the reservation", "order_id", s.order.OrderID, "error", err)
	case ans.Replayed && (ans.Outcome == activities.InventoryReserved || ans.Outcome == activities.InventoryRejected):
		// The request was made before (a retried attempt, an operator's new
		// run of the event): its signal went out then, perhaps to a run
		// that is gone, so the stored answer is the answer.
		answer, answered = ans, true
	default:
		s.setStage(ctx, StageAwaitingStock)
		answer, answered, err = s.awaitStock(ctx, deadline)
		if err != nil {
			return s.result(""), true, err
		}
	}
	if s.pollCancel(ctx) {
		res, err := s.stop(ctx) // the cancel workflow releases (SagaResult.StockReserved)
		return res, true, err
	}
	switch {
	case answered && answer.Outcome == activities.InventoryReserved:
		s.status.StockReserved = true
		return res, false, nil
	case answered: // rejected: nothing of any SKU is held
		s.stockHeld = false
		s.status.LastError = "out of stock: " + answer.Reason
		res, err := s.failWithoutCharge(ctx, ReasonOutOfStock)
		return res, true, err
	}
	if s.status.LastError == "" {
		s.status.LastError = "the inventory's answer did not arrive within " + inv.AnswerTimeout.String()
	}
	res, err = s.failWithoutCharge(ctx, ReasonStockNotConfirmed)
	return res, true, err
}

// awaitStock waits until deadline for the inventory's answer to this
// order's reservation (StockReserved or StockRejected), each event once
// (eventsignal drops a re-delivery), or for a cancel signal. answered is
// false when the deadline passed or a cancel arrived.
func (s *saga) awaitStock(ctx workflow.Context, deadline time.Time) (answer activities.InventoryOutcome, answered bool, err error) {
	for {
		remaining := deadline.Sub(workflow.Now(ctx))
		if remaining <= 0 {
			return answer, false, nil
		}
		ev, got, cancelled := s.awaitSignal(ctx, s.stock, remaining)
		switch {
		case ctx.Err() != nil:
			return answer, false, ctx.Err()
		case cancelled:
			return answer, false, nil
		case !got:
			continue // a duplicate was dropped, or the timer fired: the loop checks the deadline
		}
		var o activities.InventoryOutcome
		// Decoding JSON is deterministic (see orderCreated).
		err := json.Unmarshal(ev.Payload, &o) //workflowcheck:ignore
		if err != nil {
			workflow.GetLogger(ctx).Error("an inventory event the saga cannot read; ignored", "order_id", s.order.OrderID, "event_id", ev.EventID, "error", err)
			continue
		}
		if o.OrderID != s.order.OrderID || (o.Outcome != activities.InventoryReserved && o.Outcome != activities.InventoryRejected) {
			workflow.GetLogger(ctx).Info("an inventory event that is not this reservation's answer; ignored",
				"order_id", s.order.OrderID, "event_id", ev.EventID, "event_type", ev.EventType, "outcome", o.Outcome)
			continue
		}
		// Re-deliveries of what came already (a relay that lost its mark
		// signals again) are dropped and counted now; anything else
		// buffered is not this reservation's answer.
		s.stock.Drain(func(e handoff.EventInput) {
			workflow.GetLogger(ctx).Info("an inventory event after the reservation's answer; ignored",
				"order_id", s.order.OrderID, "event_id", e.EventID, "event_type", e.EventType)
		})
		return o, true, nil
	}
}

// failWithoutCharge ends a saga whose stock step failed: nothing was
// charged. Whatever may be held is released first; the order is projected
// payment_failed (the order's final "not paid" status) with reason, the
// customer told. A release that fails for good is a compensation failure,
// after the order was projected and mailed.
func (s *saga) failWithoutCharge(ctx workflow.Context, reason string) (handoff.SagaResult, error) {
	s.setStage(ctx, StageStockFailed)
	s.reason = reason
	releaseErr := s.releaseStock(ctx)
	if _, err := s.project(ctx, activities.StepPaymentFailed); err != nil {
		return s.result(""), err
	}
	if err := s.email(ctx, s.emailInput(activities.EmailStockUnavailable)); err != nil {
		return s.result(""), err
	}
	if releaseErr != nil {
		return s.result(""), releaseErr
	}
	s.setStage(ctx, StageStockFailed)
	return s.result(handoff.SagaPaymentFailed), nil
}

// releaseStock releases what the saga may hold at the inventory, once; a
// release that fails for good is returned as a compensation failure
// ([CompensationRelease]).
func (s *saga) releaseStock(ctx workflow.Context) error {
	if !s.stockHeld {
		return nil
	}
	prev := s.status.Stage
	s.setStage(ctx, StageReleasingStock)
	err := releaseReservation(ctx, s.in.EventID, s.order.OrderID, workflow.GetInfo(ctx).WorkflowExecution.ID)
	if err != nil {
		s.status.LastError = err.Error()
		s.setStage(ctx, StageCompensationFailed)
		return compensationFailed(ctx, CompensationFailure{Compensation: CompensationRelease, OrderID: s.order.OrderID,
			PaymentIntentID: s.status.PaymentIntentID, Amount: s.order.Amount}, err)
	}
	s.stockHeld = false
	s.status.StockReserved = false
	s.setStage(ctx, prev)
	return nil
}

// releaseReservation releases the reservation of the OrderCreated event
// createdEventID under its release key, whoever asks: the saga's workflow
// ID is the event's ID, and the request is the same from every path.
func releaseReservation(ctx workflow.Context, createdEventID, orderID, sagaWorkflowID string) error {
	var out activities.InventoryOutcome
	return workflow.ExecuteActivity(releaseOptions(ctx), a.ReleaseStock, activities.ReleaseStockInput{
		EventID: createdEventID, OrderID: orderID, WorkflowID: sagaWorkflowID,
	}).Get(ctx, &out)
}

// awaitSignal waits up to remaining for the next event of recv (got, with
// ev) or a cancel signal (cancelled; pollCancel takes it), whichever comes
// first; neither when the timer fired, or when recv dropped a re-delivery.
// The timer is cancelled before it returns. The saga's waits for the
// inventory's answer and for a payment's webhook share it.
func (s *saga) awaitSignal(ctx workflow.Context, recv *eventsignal.Receiver[handoff.EventInput], remaining time.Duration) (ev handoff.EventInput, got, cancelled bool) {
	tctx, cancelTimer := workflow.WithCancel(ctx)
	timer := workflow.NewTimer(tctx, remaining)
	sel := workflow.NewSelector(ctx)
	recv.AddToSelector(sel, func(e handoff.EventInput) { ev, got = e, true })
	sel.AddReceive(s.cancelCh, func(workflow.ReceiveChannel, bool) { cancelled = true })
	sel.AddFuture(timer, func(workflow.Future) {})
	sel.Select(ctx)
	cancelTimer()
	return ev, got, cancelled
}
