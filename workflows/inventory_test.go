package workflows

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
)

// The saga's stock step against a fake inventory: ReserveStock and
// ReleaseStock are mocked, and the inventory's answer arrives as the signal
// its relay would send (activities.InventorySignal, a temporalpub.EventInput
// whose payload is the documented JSON).

var inventoryOn = &activities.InventorySettings{Enabled: true, AnswerTimeout: 2 * time.Minute}

// inventoryEvent is the signal the inventory's relay sends for an outcome.
func inventoryEvent(t *testing.T, eventID, eventType, outcome, reason string) handoff.EventInput {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"order_id": testOrderID, "workflow_id": testCreatedEvent, "outcome": outcome,
		"items": []map[string]any{{"sku": "SKU-1", "quantity": 2}}, "reason": reason,
		"idempotency_key": activities.ReserveKey(testCreatedEvent),
	})
	require.NoError(t, err)
	return handoff.EventInput{
		EventID: eventID, EventType: eventType, AggregateType: "inventory_reservation", AggregateID: testOrderID,
		Sequence: 1, SchemaVersion: 1, OccurredAt: testOccurredAt, Payload: payload,
	}
}

const (
	testStockEvent   = "33333333-3333-4333-8333-333333333333"
	testReleaseEvent = "44444444-4444-4444-8444-444444444444"
)

// signalStockAt delivers ev as the inventory's signal after d of workflow time.
func (h *harness) signalStockAt(ev handoff.EventInput, d time.Duration) {
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(activities.InventorySignal, ev) }, d)
}

func reserveAnswer(outcome string) func(activities.ReserveStockInput) (activities.InventoryOutcome, error) {
	return func(in activities.ReserveStockInput) (activities.InventoryOutcome, error) {
		return activities.InventoryOutcome{OrderID: in.OrderID, WorkflowID: in.WorkflowID, Outcome: outcome, EventID: testStockEvent}, nil
	}
}

func releaseOK(_ int, in activities.ReleaseStockInput) (activities.InventoryOutcome, error) {
	return activities.InventoryOutcome{OrderID: in.OrderID, Outcome: activities.InventoryReleased, EventID: testReleaseEvent}, nil
}

// runSagaErr runs the saga to a failure and returns its error.
func runSagaErr(t *testing.T, h *harness, method string) error {
	t.Helper()
	h.env.ExecuteWorkflow(OrderCreatedWorkflow, createdInput(t, method))
	require.True(t, h.env.IsWorkflowCompleted())
	err := h.env.GetWorkflowError()
	require.Error(t, err)
	return err
}

// Reserve, the StockReserved signal, then the charge: the request carries
// the order's items, the saga's workflow ID and the reserve key's event.
func TestSagaReservesStockBeforeCharging(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{inventory: inventoryOn, reserve: reserveAnswer(activities.InventoryReserved), charge: chargeOK})
	h.signalStockAt(inventoryEvent(t, testStockEvent, activities.InventoryEventReserved, activities.InventoryReserved, ""), 5*time.Second)

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"reserve", "charge", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
	require.Equal(t, []activities.ReserveStockInput{{EventID: testCreatedEvent, OrderID: testOrderID, WorkflowID: "default-test-workflow-id",
		Items: []activities.InventoryItem{{SKU: "SKU-1", Quantity: 2}}, CustomerEmail: "ada@example.com"}}, h.reserves,
		"the customer's address rides along, never sent, so the codec encrypts the order's lines with their key")
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.True(t, res.StockReserved, "a confirmed order keeps its stock; a later cancel releases it")
	st := h.sagaStatus()
	require.True(t, st.StockReserved)
	require.Equal(t, StageConfirmed, st.Stage)
}

// A StockRejected fails the order before any money moves: no charge, no
// release (a rejection holds nothing), payment_failed with its reason and
// the stock email.
func TestSagaOutOfStockFailsWithoutCharging(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{inventory: inventoryOn, reserve: reserveAnswer(activities.InventoryRejected)})
	h.signalStockAt(inventoryEvent(t, testStockEvent, activities.InventoryEventRejected, activities.InventoryRejected, "insufficient_stock"), time.Second)

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"reserve", "project:payment_failed", "email:stock_unavailable"}, h.fx.list())
	require.Empty(t, h.charges)
	require.Equal(t, handoff.SagaPaymentFailed, res.Outcome)
	require.Equal(t, ReasonOutOfStock, res.Reason)
	require.False(t, res.Charged)
	require.False(t, res.StockReserved)
	st := h.sagaStatus()
	require.Equal(t, StageStockFailed, st.Stage)
	require.Contains(t, st.LastError, "insufficient_stock")
}

// A declined charge gives the stock back, under the release key of the
// reserving event.
func TestSagaDeclineReleasesStock(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{inventory: inventoryOn, reserve: reserveAnswer(activities.InventoryReserved), release: releaseOK,
		charge: func(int, activities.ChargeInput) (activities.ChargeResult, error) {
			return activities.ChargeResult{}, declinedErr()
		}})
	h.signalStockAt(inventoryEvent(t, testStockEvent, activities.InventoryEventReserved, activities.InventoryReserved, ""), time.Second)

	res := runSaga(t, h, "pm_card_chargeDeclined")

	require.Equal(t, []string{"reserve", "charge", "project:payment_failed", "email:payment_failed", "release"}, h.fx.list())
	require.Equal(t, []activities.ReleaseStockInput{{EventID: testCreatedEvent, OrderID: testOrderID, WorkflowID: "default-test-workflow-id"}}, h.releases)
	require.Equal(t, handoff.SagaPaymentFailed, res.Outcome)
	require.False(t, res.StockReserved, "released: nothing left for a cancel to release")
	require.Equal(t, StagePaymentFailed, h.sagaStatus().Stage)
}

// A release that still fails when its retries are spent is a compensation
// failure of its own name: the order is payment_failed (nothing was
// charged), the workflow fails CompensationFailed with compensation
// "release", and the counter operators alert on moves.
func TestSagaReleaseFailureIsCompensationFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{inventory: inventoryOn, reserve: reserveAnswer(activities.InventoryReserved),
		charge: func(int, activities.ChargeInput) (activities.ChargeResult, error) {
			return activities.ChargeResult{}, declinedErr()
		},
		release: func(int, activities.ReleaseStockInput) (activities.InventoryOutcome, error) {
			return activities.InventoryOutcome{}, errors.New("inventory /reservations/x/release: 503 Service Unavailable")
		}})
	h.signalStockAt(inventoryEvent(t, testStockEvent, activities.InventoryEventReserved, activities.InventoryReserved, ""), time.Second)

	err := runSagaErr(t, h, "pm_card_chargeDeclined")

	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, ErrTypeCompensationFailed, appErr.Type())
	require.Contains(t, appErr.Error(), "stock reservation was not released")
	var f CompensationFailure
	require.NoError(t, appErr.Details(&f))
	require.Equal(t, CompensationRelease, f.Compensation)
	require.Equal(t, testOrderID, f.OrderID)
	require.Greater(t, len(h.releases), 3, "transient failures are retried (within the release window) before giving up")
	require.Contains(t, h.fx.list(), "project:payment_failed")
	require.Equal(t, int64(1), h.metrics.count(MetricCompensationFailures))
	require.Equal(t, StageCompensationFailed, h.sagaStatus().Stage)
}

// The answer that arrives before the saga waits for it (the relay is faster
// than the reserve's HTTP answer), and arrives twice (a relay that lost its
// mark signals again): the saga takes it once and charges once.
func TestSagaStockAnswerEarlyAndTwice(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{inventory: inventoryOn, reserve: reserveAnswer(activities.InventoryReserved), reserveDelay: 10 * time.Second, charge: chargeOK})
	ev := inventoryEvent(t, testStockEvent, activities.InventoryEventReserved, activities.InventoryReserved, "")
	h.signalStockAt(ev, time.Second)
	h.signalStockAt(ev, 2*time.Second)

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"reserve", "charge", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
	require.Len(t, h.charges, 1)
	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.Equal(t, 1, h.sagaStatus().InventoryDuplicates, "the second delivery of the event was dropped")
}

// An event that is not this reservation's answer (a release's, another
// order's) does not end the wait; the answer after it does.
func TestSagaIgnoresOtherInventoryEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{inventory: inventoryOn, reserve: reserveAnswer(activities.InventoryReserved), charge: chargeOK})
	h.signalStockAt(inventoryEvent(t, testReleaseEvent, activities.InventoryEventReleased, activities.InventoryReleased, "nothing_reserved"), time.Second)
	h.signalStockAt(inventoryEvent(t, testStockEvent, activities.InventoryEventReserved, activities.InventoryReserved, ""), 3*time.Second)

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.Len(t, h.charges, 1)
}

// No answer within the deadline: the saga fails the order without charging
// and releases whatever may be held (a release of nothing leaves a tombstone
// that refuses the reserve if it is delivered late).
func TestSagaStockDeadlineFailsAndReleases(t *testing.T) {
	t.Parallel()
	var h *harness
	var releasedAt time.Time
	h = newHarness(t, fakes{inventory: inventoryOn, reserve: reserveAnswer(activities.InventoryReserved),
		release: func(n int, in activities.ReleaseStockInput) (activities.InventoryOutcome, error) {
			releasedAt = h.env.Now()
			return releaseOK(n, in)
		}})
	start := h.env.Now()

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"reserve", "release", "project:payment_failed", "email:stock_unavailable"}, h.fx.list())
	require.Empty(t, h.charges)
	require.Equal(t, handoff.SagaPaymentFailed, res.Outcome)
	require.Equal(t, ReasonStockNotConfirmed, res.Reason)
	require.False(t, res.StockReserved)
	require.GreaterOrEqual(t, releasedAt.Sub(start), inventoryOn.AnswerTimeout, "the saga waited the whole deadline")
	require.Contains(t, h.sagaStatus().LastError, "did not arrive within 2m0s")
}

// A worker without an inventory (no INVENTORY_URL) records that and skips
// the step: nothing is reserved, the saga is today's.
func TestSagaWithoutInventorySkipsTheStep(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{inventory: &activities.InventorySettings{}, charge: chargeOK})

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"charge", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
	require.False(t, res.StockReserved)
}

// A run recorded before ChangeInventory (its GetVersion answers the default
// version) skips the step even on a worker with an inventory: replaying it
// issues the commands it issued.
func TestSagaBeforeChangeInventorySkipsTheStep(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{inventory: inventoryOn, charge: chargeOK})
	h.env.ExecuteWorkflow(orderCreatedWith(pinned(ChangeInventory, workflow.DefaultVersion)), createdInput(t, "pm_card_visa"))
	require.NoError(t, h.env.GetWorkflowError())

	require.Equal(t, []string{"charge", "project:paid", "email:confirmation", "project:confirmed"}, h.fx.list())
}

// A cancel of a charged order whose saga holds stock refunds, projects it
// cancelled, then releases the stock, before the email.
func TestCancelRefundsAndReleases(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{refund: refundOK, release: releaseOK,
		await: func(in activities.AwaitSagaInput) (activities.AwaitSagaResult, error) {
			r, err := sagaResult(handoff.SagaConfirmed, true)(in)
			r.Result.StockReserved = true
			return r, err
		}})
	expectSignal(h, nil)

	res := runCancel(t, h)

	require.Equal(t, []string{"await", "refund:" + testPaymentIntent + ":2500", "project:cancelled", "release", "email:cancellation"}, h.fx.list())
	require.Equal(t, []activities.ReleaseStockInput{{EventID: testCreatedEvent, OrderID: testOrderID, WorkflowID: testCreatedEvent}}, h.releases)
	require.True(t, res.Refunded)
	require.True(t, res.StockReleased)
}

// A cancel whose release fails for good is a compensation failure named
// release; the refund before it stands.
func TestCancelReleaseFailureIsCompensationFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{refund: refundOK,
		release: func(int, activities.ReleaseStockInput) (activities.InventoryOutcome, error) {
			return activities.InventoryOutcome{}, temporal.NewNonRetryableApplicationError("409 workflow_mismatch", activities.ErrTypeInventoryRefused, nil)
		},
		await: func(in activities.AwaitSagaInput) (activities.AwaitSagaResult, error) {
			r, err := sagaResult(handoff.SagaConfirmed, true)(in)
			r.Result.StockReserved = true
			return r, err
		}})
	expectSignal(h, nil)

	h.env.ExecuteWorkflow(OrderCancelledWorkflow, cancelledInput(t))
	err := h.env.GetWorkflowError()
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, ErrTypeCompensationFailed, appErr.Type())
	var f CompensationFailure
	require.NoError(t, appErr.Details(&f))
	require.Equal(t, CompensationRelease, f.Compensation)
	require.Equal(t, []string{"await", "refund:" + testPaymentIntent + ":2500", "project:cancelled", "release"}, h.fx.list())
	require.Equal(t, int64(1), h.metrics.count(MetricCompensationFailures))
}

// A cancel of a saga that stopped with a reservation requested (cancelled
// while waiting for the answer): the saga stops, the cancel releases.
func TestSagaCancelledWhileAwaitingStockStops(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{inventory: inventoryOn, reserve: reserveAnswer(activities.InventoryReserved)})
	h.signalCancelAt(30 * time.Second)

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, []string{"reserve", "project:saga_stopped"}, h.fx.list())
	require.Equal(t, handoff.SagaStopped, res.Outcome)
	require.True(t, res.StockReserved, "the cancel workflow releases what the saga may hold")
	require.Empty(t, h.charges)
}

// A reserve answered from the inventory's stored answer (an operator's new
// run of the event, whose first run's signal went to a run that is gone)
// is the answer: the saga does not wait for a signal that will not come.
func TestSagaReplayedReserveAnswerIsTheAnswer(t *testing.T) {
	t.Parallel()
	var h *harness
	var chargedAt time.Time
	h = newHarness(t, fakes{inventory: inventoryOn,
		charge: func(n int, in activities.ChargeInput) (activities.ChargeResult, error) {
			chargedAt = h.env.Now()
			return chargeOK(n, in)
		},
		reserve: func(in activities.ReserveStockInput) (activities.InventoryOutcome, error) {
			o, err := reserveAnswer(activities.InventoryReserved)(in)
			o.Replayed = true
			return o, err
		}})
	start := h.env.Now()

	res := runSaga(t, h, "pm_card_visa")

	require.Equal(t, handoff.SagaConfirmed, res.Outcome)
	require.False(t, chargedAt.IsZero())
	require.Less(t, chargedAt.Sub(start), time.Minute, "charged without waiting for the answer timeout")
}

// An inventory event for a closed saga (the inventory's
// INVENTORY_CLOSED_WORKFLOW) is read and recorded; nothing is called.
func TestInventoryLateEventWorkflow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{})
	h.env.ExecuteWorkflow(InventoryLateEventWorkflow,
		inventoryEvent(t, testReleaseEvent, activities.InventoryEventReleased, activities.InventoryReleased, ""))
	require.NoError(t, h.env.GetWorkflowError())
	var o activities.InventoryOutcome
	require.NoError(t, h.env.GetWorkflowResult(&o))
	require.Equal(t, activities.InventoryOutcome{OrderID: testOrderID, WorkflowID: testCreatedEvent, Outcome: activities.InventoryReleased,
		Items: []activities.InventoryItem{{SKU: "SKU-1", Quantity: 2}}, IdempotencyKey: activities.ReserveKey(testCreatedEvent)}, o)
	require.Empty(t, h.fx.list())
}

// A cancel on a worker with an inventory releases even when the saga's
// result holds no reservation: an earlier run of the saga may have made
// one (a release of nothing is answered and harmless).
func TestCancelReleasesWhenTheSagaDoesNotSay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakes{inventory: inventoryOn, refund: refundOK, release: releaseOK, await: sagaResult(handoff.SagaConfirmed, true)})
	expectSignal(h, nil)

	res := runCancel(t, h)

	require.Equal(t, []string{"await", "refund:" + testPaymentIntent + ":2500", "project:cancelled", "release", "email:cancellation"}, h.fx.list())
	require.True(t, res.StockReleased)
}
