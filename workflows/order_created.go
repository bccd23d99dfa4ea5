package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/temporalpub/eventsignal"
)

// Stage is where a workflow is, as its "status" query reports it.
type Stage string

// Stages of the saga.
const (
	StageStarted       Stage = "started"
	StageCharging      Stage = "charging"
	StageReconciling   Stage = "reconciling"
	StageCharged       Stage = "charged"
	StageConfirming    Stage = "confirming"
	StageConfirmed     Stage = "confirmed"
	StagePaymentFailed Stage = "payment_failed"
	StageStopped       Stage = "stopped"
	StageCompensating  Stage = "compensating"
	StageCompensated   Stage = "compensated"
	// StageAwaitingWebhook: the charge is processing and the saga waits
	// for its webhook ([ChangePaymentWebhooks]).
	StageAwaitingWebhook Stage = "awaiting_webhook"
)

// SagaStatus is the saga's state for operators (query "status").
type SagaStatus struct {
	OrderID         string `json:"order_id"`
	Stage           Stage  `json:"stage"`
	Charged         bool   `json:"charged"`
	PaymentIntentID string `json:"payment_intent_id,omitempty"`
	// ChargeRounds counts charge attempts the workflow made (each one may be
	// retried by Temporal under the same key).
	ChargeRounds    int    `json:"charge_rounds"`
	CancelRequested bool   `json:"cancel_requested"`
	CancelEventID   string `json:"cancel_event_id,omitempty"`
	// StockReserved: the inventory confirmed the order's reservation, and
	// the saga has not released it ([ChangeInventory]).
	StockReserved bool `json:"stock_reserved,omitempty"`
	// InventoryDuplicates counts re-deliveries of the inventory's events
	// the saga dropped (eventsignal).
	InventoryDuplicates int    `json:"inventory_duplicates,omitempty"`
	LastError           string `json:"last_error,omitempty"`
}

// chargeState is what the saga knows about its charge.
type chargeState int

const (
	notAttempted chargeState = iota
	inDoubt                  // sent, answer not (yet) known
	charged
	declined
	notCharged // reconciled: nothing was charged, and the saga gives up
)

type saga struct {
	// getVersion is workflow.GetVersion; a replay test swaps it to prove
	// what the guard protects (see versioning_test.go).
	getVersion versionFunc
	in         handoff.EventInput
	order      orders.OrderCreated
	status     SagaStatus
	charge     chargeState
	// firstAttemptAt is when the charge key was first sent: the start of its
	// lifetime, which bounds every later use of it.
	firstAttemptAt time.Time
	// stoppedByCancel: the saga stopped on a cancel signal, which hands any
	// refund to the cancel workflow; its own compensation must not run.
	stoppedByCancel bool
	// safe is ChangeSafeCharge in force for this run.
	safe bool
	// edges is ChangeTimeEdges in force for this run.
	edges    bool
	cancelCh workflow.ReceiveChannel
	// stock receives the inventory's events (signal
	// activities.InventorySignal), each event once.
	stock *eventsignal.Receiver[handoff.EventInput]
	// webhooks receives the provider's webhooks about the order's payment
	// (signal handoff.SignalPaymentWebhook), each event once.
	webhooks *eventsignal.Receiver[handoff.EventInput]
	// stockHeld: the saga asked for a reservation it has not released (nor
	// seen rejected), so stock may be held for the order.
	stockHeld bool
	// reason says why the order failed without a charge ([ReasonOutOfStock]).
	reason string
	// awaitingAuth is the PaymentIntent waiting for the customer's 3-D
	// Secure ([ChangeThreeDSecure]) while the saga waits or cancels it.
	awaitingAuth string
}

// OrderCreatedWorkflow is the payment saga of one order (workflow ID = the
// OrderCreated event id). See the package doc for the flow, the cancel
// protocol and the compensation policy.
func OrderCreatedWorkflow(ctx workflow.Context, in handoff.EventInput) (handoff.SagaResult, error) {
	return orderCreated(ctx, in, workflow.GetVersion)
}

func orderCreated(ctx workflow.Context, in handoff.EventInput, getVersion versionFunc) (res handoff.SagaResult, err error) {
	if err := setOrderID(ctx, in.AggregateID); err != nil {
		return res, err
	}
	// Decoding JSON is deterministic; workflowcheck flags it only because
	// the runtime's allocator may start GC goroutines.
	order, err := orders.DecodeOrderCreated(in.SchemaVersion, in.Payload) //workflowcheck:ignore
	if err != nil {
		// The relay validates payloads before starting a run; reaching this
		// is a bug, and retrying cannot fix a payload.
		return res, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidPayload", err)
	}
	s := &saga{getVersion: getVersion, in: in, order: order, status: SagaStatus{OrderID: order.OrderID, Stage: StageStarted}}
	// First, before anything could read the channel: the inventory's
	// answers are buffered from the run's first task on. Creating it issues
	// no command, so runs recorded before [ChangeInventory] replay as they were.
	s.stock = eventsignal.New[handoff.EventInput](ctx, activities.InventorySignal, eventsignal.State{}, eventsignal.Options{})
	s.webhooks = eventsignal.New[handoff.EventInput](ctx, handoff.SignalPaymentWebhook, eventsignal.State{}, eventsignal.Options{})
	s.setStage(ctx, StageStarted)
	s.safe = getVersion(ctx, ChangeSafeCharge, workflow.DefaultVersion, 1) >= 1
	s.edges = getVersion(ctx, ChangeTimeEdges, workflow.DefaultVersion, 1) >= 1
	if err := workflow.SetQueryHandler(ctx, handoff.QueryStatus, func() (SagaStatus, error) {
		st := s.status
		st.InventoryDuplicates = s.stock.Duplicates()
		return st, nil
	}); err != nil {
		return res, err
	}
	s.cancelCh = workflow.GetSignalChannel(ctx, handoff.SignalCancel)

	// Compensation of a saga cancelled through Temporal (an operator's
	// `temporal workflow cancel`, not an order cancel): learn the truth
	// about the charge and refund it, on a disconnected context because ctx
	// is already cancelled.
	defer func() {
		if ctx.Err() == nil || s.stoppedByCancel || (s.safe && err == nil) {
			return
		}
		dctx, cancel := workflow.NewDisconnectedContext(ctx)
		defer cancel()
		err = s.compensate(dctx)
	}()

	res, err = s.run(ctx)
	if ctx.Err() == nil {
		// Webhooks signalled while the saga worked and not read: a dispute
		// or a failed refund must not end with the run.
		err = s.closeIncidents(ctx, err)
	}
	return res, err
}

// pollCancel takes any cancel signal that has arrived, without blocking. The
// saga polls at its safe points instead of listening in a goroutine: a
// signal that arrived before the saga's first workflow task is already in
// the channel when the first poll runs, whereas a listener goroutine would
// only run after the main coroutine blocked — on the charge it must not make.
func (s *saga) pollCancel(ctx workflow.Context) bool {
	for {
		var req handoff.CancelRequest
		if !s.cancelCh.ReceiveAsync(&req) {
			return s.status.CancelRequested
		}
		if !s.status.CancelRequested {
			s.status.CancelRequested = true
			s.status.CancelEventID = req.CancelEventID
			workflow.GetLogger(ctx).Info("cancel requested", "order_id", s.order.OrderID, "cancel_event_id", req.CancelEventID)
		}
	}
}

func (s *saga) run(ctx workflow.Context) (handoff.SagaResult, error) {
	if s.pollCancel(ctx) {
		return s.stop(ctx)
	}
	if s.edges {
		if res, done, err := s.checkOrder(ctx); done || err != nil {
			return res, err
		}
	}
	if res, done, err := s.reserveStock(ctx); done || err != nil {
		return res, err
	}
	if err := s.chargeUntilKnown(ctx); err != nil {
		return s.result(""), err
	}
	switch s.charge {
	case charged:
		return s.confirmCharged(ctx, true)
	default: // declined, or not charged within the window
		if s.pollCancel(ctx) {
			return s.stop(ctx)
		}
		if _, err := s.project(ctx, activities.StepPaymentFailed); err != nil {
			return s.result(""), err
		}
		if err := s.email(ctx, s.emailInput(activities.EmailPaymentFailed)); err != nil {
			return s.result(""), err
		}
		// Nothing was charged: give the stock back (a no-op without a
		// reservation). The order failed either way; a release that cannot
		// be done is a compensation failure.
		if err := s.releaseStock(ctx); err != nil {
			return s.result(""), err
		}
		s.setStage(ctx, StagePaymentFailed)
		return s.result(handoff.SagaPaymentFailed), nil
	}
}

// confirmCharged finishes a charged saga: projects paid (unless an earlier
// run of the event already did), sends the confirmation and projects
// confirmed, stopping instead if a cancel arrived before the email.
func (s *saga) confirmCharged(ctx workflow.Context, projectPaid bool) (handoff.SagaResult, error) {
	s.setStage(ctx, StageCharged)
	if projectPaid {
		if _, err := s.project(ctx, activities.StepPaid); err != nil {
			return s.result(""), err
		}
	}
	if s.pollCancel(ctx) {
		return s.stop(ctx)
	}
	s.setStage(ctx, StageConfirming)
	if err := s.confirm(ctx); err != nil {
		return s.result(""), err
	}
	// The email went out, so the order is confirmed even if a cancel
	// arrived meanwhile; the cancel workflow refunds it next.
	if _, err := s.project(ctx, activities.StepConfirmed); err != nil {
		return s.result(""), err
	}
	s.setStage(ctx, StageConfirmed)
	return s.result(handoff.SagaConfirmed), nil
}

// checkOrder asks our database, the authority on the order, before any
// charge (ChangeTimeEdges). A run is not always the event's first: an
// operator's replay of a failed or terminated run, or a re-delivery behind
// the namespace retention, starts a run that never received the cancel
// signal and knows nothing of what an earlier run did. done reports that the
// run ends here with res:
//   - cancelled, or a cancel requested: never charge. An earlier run may
//     have charged, so the provider is asked (without using the charge key)
//     and the result says so: a cancel saga awaiting this run refunds it.
//   - paid: an earlier run charged and ended before confirming; finish its
//     work (the confirmation's inbox row keeps the email single).
//   - confirmed or payment_failed: the event's work is done; nothing is
//     charged, mailed or projected again.
//   - pending: charge as usual.
func (s *saga) checkOrder(ctx workflow.Context) (res handoff.SagaResult, done bool, err error) {
	var st activities.OrderStateResult
	if err := workflow.ExecuteActivity(s.settled(projectOptions(ctx)), a.GetOrderState,
		activities.OrderStateInput{OrderID: s.order.OrderID}).Get(ctx, &st); err != nil {
		return s.result(""), true, err
	}
	logger := workflow.GetLogger(ctx)
	switch orders.Status(st.Status) {
	case orders.StatusPending:
		if !st.CancelRequested {
			return res, false, nil
		}
		fallthrough
	case orders.StatusCancelled:
		logger.Info("the order is cancelled or cancel-requested: not charging",
			"order_id", s.order.OrderID, "status", st.Status, "delivery", s.in.Delivery)
		s.status.CancelRequested = true
		if err := s.learnCharge(ctx, st.PaymentIntentID); err != nil {
			return s.result(""), true, err
		}
		res, err := s.stop(ctx)
		return res, true, err
	case orders.StatusPaid:
		if st.CancelRequested {
			logger.Info("the order is paid and cancel-requested: the cancel saga refunds it", "order_id", s.order.OrderID)
			s.status.CancelRequested = true
			s.charged(st.PaymentIntentID)
			res, err := s.stop(ctx)
			return res, true, err
		}
		logger.Info("an earlier run charged this order: confirming without charging", "order_id", s.order.OrderID)
		s.charged(st.PaymentIntentID)
		res, err := s.confirmCharged(ctx, false)
		return res, true, err
	case orders.StatusConfirmed:
		logger.Info("the order is already confirmed: nothing to do", "order_id", s.order.OrderID, "delivery", s.in.Delivery)
		s.charged(st.PaymentIntentID)
		s.setStage(ctx, StageConfirmed)
		return s.result(handoff.SagaConfirmed), true, nil
	case orders.StatusPaymentFailed:
		logger.Info("the order's payment already failed: nothing to do", "order_id", s.order.OrderID, "delivery", s.in.Delivery)
		s.charge = declined
		s.setStage(ctx, StagePaymentFailed)
		return s.result(handoff.SagaPaymentFailed), true, nil
	}
	return s.result(""), true, temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("order %s has status %q, which the saga does not know", s.order.OrderID, st.Status), activities.ErrTypeIllegalTransition, nil)
}

// learnCharge finds out, without ever charging, whether an earlier run of
// this event took money: the order's recorded PaymentIntent if it has one,
// otherwise the provider's complete record (search, then the list since the
// event; never a replay under the key, which would make the charge).
func (s *saga) learnCharge(ctx workflow.Context, paymentIntentID string) error {
	if paymentIntentID != "" {
		s.charged(paymentIntentID)
		return nil
	}
	s.setStage(ctx, StageReconciling)
	rec, err := reconcileAll(ctx, true, activities.ReconcileInput{
		Charge:     s.chargeInput(),
		OccurredAt: s.in.OccurredAt,
	})
	if err != nil {
		return err
	}
	if rec.Outcome == activities.Charged {
		s.charged(rec.PaymentIntentID)
	}
	return nil
}

func (s *saga) chargeInput() activities.ChargeInput {
	return activities.ChargeInput{
		EventID:       s.in.EventID,
		OrderID:       s.order.OrderID,
		Amount:        s.order.Amount,
		Currency:      s.order.Currency,
		PaymentMethod: s.order.PaymentMethod,
	}
}

// chargeUntilKnown charges once and, whenever the answer is lost, reconciles
// before deciding anything. It leaves s.charge at charged, declined or
// notCharged. A cancel before the first attempt, or after reconciliation
// proved nothing was charged, stops it without charging.
func (s *saga) chargeUntilKnown(ctx workflow.Context) error {
	in := s.chargeInput()
	s.firstAttemptAt = workflow.Now(ctx)
	firstDelivery := s.edges && s.in.Delivery == handoff.DeliveryFirst
	if s.safe && !firstDelivery && !s.in.OccurredAt.IsZero() && s.in.OccurredAt.Before(s.firstAttemptAt) {
		// The key may have been used by an earlier run of this event; its
		// lifetime cannot have begun before the event committed. A first
		// delivery has no earlier run (Temporal would have refused the
		// start), so its key's lifetime begins with its own first attempt,
		// however late the delivery.
		s.firstAttemptAt = s.in.OccurredAt
	}
	deadline := s.firstAttemptAt.Add(ChargeWindow)
	for round := 1; ; round++ {
		remaining := deadline.Sub(workflow.Now(ctx))
		if s.safe && round == 1 && remaining <= 0 && !s.pollCancel(ctx) {
			// Too late to trust the key: an earlier run may have charged
			// under it. Only the provider's record can say.
			rec, err := s.reconcile(ctx, in)
			if err != nil {
				return err
			}
			switch {
			case rec.Outcome == activities.Charged:
				s.charged(rec.PaymentIntentID)
				return nil
			case rec.Outcome == activities.Declined:
				s.charge = declined
				return nil
			case !s.edges:
				workflow.GetLogger(ctx).Error("not charging: the charge key's lifetime is over and the provider holds no charge",
					"order_id", s.order.OrderID, "key", activities.ChargeKey(s.in.EventID))
				s.charge = notCharged
				return nil
			}
			// The provider's complete record holds no charge of this event,
			// and the order is pending (checkOrder): nothing was taken, and
			// any earlier use of the key is over (the provider has forgotten
			// it, or replays an answer that was not a charge). This charge is
			// the only one; the key's lifetime starts again with it.
			workflow.GetLogger(ctx).Info("late run: the provider holds no charge, charging now",
				"order_id", s.order.OrderID, "delivery", s.in.Delivery, "key", activities.ChargeKey(s.in.EventID))
			s.firstAttemptAt = workflow.Now(ctx)
			deadline = s.firstAttemptAt.Add(ChargeWindow)
			remaining = ChargeWindow
		}
		switch {
		case s.pollCancel(ctx):
			s.charge = notCharged
			return nil
		case round > maxChargeRounds || remaining <= 0:
			workflow.GetLogger(ctx).Error("giving up on the charge: the provider never recorded it",
				"order_id", s.order.OrderID, "rounds", round-1, "key", activities.ChargeKey(s.in.EventID))
			s.charge = notCharged
			return nil
		}
		s.setStage(ctx, StageCharging)
		s.status.ChargeRounds = round
		s.charge = inDoubt
		var cr activities.ChargeResult
		err := workflow.ExecuteActivity(s.settled(chargeOptions(ctx, remaining)), a.ChargePayment, in).Get(ctx, &cr)
		switch {
		case err == nil:
			s.charged(cr.PaymentIntentID)
			return nil
		case isType(err, activities.ErrTypePaymentDeclined), isType(err, activities.ErrTypePaymentRejected):
			s.status.LastError = err.Error()
			s.charge = declined
			return nil
		case ctx.Err() != nil:
			return err // cancelled through Temporal: compensation takes over
		}
		// Anything else — unknown outcome, key conflict, timeouts — says
		// nothing about the money. Find out before doing anything else: a
		// charge left processing by its webhook first.
		s.status.LastError = err.Error()
		if settled, werr := s.processingSettled(ctx, err); werr != nil || settled {
			return werr
		}
		if d, ok := activities.PaymentRequiresAction(err); ok && s.threeDSecure(ctx) {
			return s.authenticate(ctx, d.PaymentIntentID, d.AuthenticationTimeout)
		}
		rec, rerr := s.reconcile(ctx, in)
		if rerr != nil {
			return rerr
		}
		switch rec.Outcome {
		case activities.Charged:
			s.charged(rec.PaymentIntentID)
			return nil
		case activities.Declined:
			s.charge = declined
			return nil
		case activities.AwaitingAuthentication:
			// A lost answer whose replay says requires_action.
			if s.threeDSecure(ctx) {
				return s.authenticate(ctx, rec.PaymentIntentID, rec.AuthenticationTimeout)
			}
		}
		s.charge = notCharged // and, unless cancelled or out of time, charge again under the same key
		if s.safe {
			// Give a provider that answered "no such charge" a moment before
			// the same key is sent again: rounds in a tight loop would spend
			// them all within one hiccup.
			if err := workflow.Sleep(ctx, chargeRoundPause(round)); err != nil {
				return err
			}
		}
	}
}

// chargeRoundPause is the wait after round's "not charged": 5 s doubling,
// at most 5 minutes.
func chargeRoundPause(round int) time.Duration {
	return min(5*time.Second<<min(round-1, 6), 5*time.Minute)
}

// settled makes the activity's future wait until a cancellation has taken
// effect (ChangeSafeCharge), so a cancel never leaves a charge or a
// projection running behind the compensation.
func (s *saga) settled(ctx workflow.Context) workflow.Context {
	if !s.safe {
		return ctx
	}
	ao := workflow.GetActivityOptions(ctx)
	ao.WaitForCancellation = true
	return workflow.WithActivityOptions(ctx, ao)
}

func (s *saga) reconcile(ctx workflow.Context, in activities.ChargeInput) (activities.ReconcileResult, error) {
	s.setStage(ctx, StageReconciling)
	return reconcileAll(ctx, s.edges, activities.ReconcileInput{
		Charge:         in,
		FirstAttemptAt: s.firstAttemptAt,
		OccurredAt:     s.in.OccurredAt,
	})
}

// setStage moves the saga to st and writes the run's current details,
// which the Temporal UI shows beside the start's summary
// (routes.describeOrderCreated): the stage, the charge, a cancel; never
// personal data. Setting them records nothing in the history.
func (s *saga) setStage(ctx workflow.Context, st Stage) {
	s.status.Stage = st
	workflow.SetCurrentDetails(ctx, sagaDetails(s.status))
}

// sagaDetails is a saga's current details (Markdown).
func sagaDetails(st SagaStatus) string {
	d := "**Stage** " + string(st.Stage)
	if st.Charged {
		d += "  \n**Charged** " + st.PaymentIntentID
	}
	if st.CancelRequested {
		d += "  \n**Cancel requested** by event " + st.CancelEventID
	}
	return d
}

func (s *saga) charged(paymentIntentID string) {
	s.charge = charged
	s.status.Charged = true
	s.status.PaymentIntentID = paymentIntentID
}

// stop ends the saga on a cancel signal: it closes the OrderCreated event's
// place in the order's sequence (so the cancel can project next) and returns
// whether money was taken; the cancel workflow owns the refund.
func (s *saga) stop(ctx workflow.Context) (handoff.SagaResult, error) {
	s.stoppedByCancel = true
	if _, err := s.project(ctx, activities.StepSagaStopped); err != nil {
		return s.result(""), err
	}
	s.setStage(ctx, StageStopped)
	workflow.GetLogger(ctx).Info("saga stopped by cancel", "order_id", s.order.OrderID, "charged", s.status.Charged)
	return s.result(handoff.SagaStopped), nil
}

func (s *saga) project(ctx workflow.Context, step activities.OrderStep) (activities.ProjectOrderResult, error) {
	var res activities.ProjectOrderResult
	err := workflow.ExecuteActivity(s.settled(projectOptions(ctx)), a.ProjectOrder, activities.ProjectOrderInput{
		EventID:         s.in.EventID,
		OrderID:         s.order.OrderID,
		Step:            step,
		Sequence:        s.in.Sequence,
		PaymentIntentID: s.status.PaymentIntentID,
	}).Get(ctx, &res)
	return res, err
}

// confirm sends the confirmation email. From [ChangeShippingAddress] on, an
// order with a shipping address (OrderCreated v2) gets it printed in the
// email, and the run's memo says where it ships.
func (s *saga) confirm(ctx workflow.Context) error {
	in := s.emailInput(activities.EmailConfirmation)
	if s.getVersion(ctx, ChangeShippingAddress, workflow.DefaultVersion, 1) >= 1 && s.order.ShippingAddress != nil {
		addr := activities.ShippingAddress(*s.order.ShippingAddress)
		in.ShippingAddress = &addr
		if err := workflow.UpsertMemo(ctx, map[string]any{MemoShipsTo: addr.Country}); err != nil {
			return err
		}
	}
	return s.email(ctx, in)
}

func (s *saga) emailInput(kind activities.EmailKind) activities.SendEmailInput {
	return activities.SendEmailInput{
		EventID:  s.in.EventID,
		OrderID:  s.order.OrderID,
		Kind:     kind,
		To:       s.order.CustomerEmail,
		Amount:   s.order.Amount,
		Currency: s.order.Currency,
	}
}

func (s *saga) email(ctx workflow.Context, in activities.SendEmailInput) error {
	return workflow.ExecuteActivity(emailOptions(ctx), a.SendEmail, in).Get(ctx, nil)
}

func (s *saga) result(outcome handoff.SagaOutcome) handoff.SagaResult {
	return handoff.SagaResult{
		OrderID:         s.order.OrderID,
		Outcome:         outcome,
		Charged:         s.status.Charged,
		PaymentIntentID: s.status.PaymentIntentID,
		Amount:          s.order.Amount,
		Currency:        s.order.Currency,
		StockReserved:   s.stockHeld,
		Reason:          s.reason,
	}
}

// compensate undoes the charge of a saga cancelled through Temporal and
// returns the run's error: a CanceledError carrying the SagaResult when the
// undo succeeded, CompensationFailed when it did not. ctx is disconnected. A charge still in doubt is reconciled first: refunding
// requires knowing the PaymentIntent, and not refunding requires knowing
// there is none.
func (s *saga) compensate(ctx workflow.Context) error {
	s.setStage(ctx, StageCompensating)
	in := s.chargeInput()
	if s.charge == inDoubt && s.awaitingAuth != "" {
		// Cancelled while the customer may still authenticate: cancel the
		// PaymentIntent first, so no charge can come after the refund
		// decision; the cancel also says whether one came before.
		if err := s.cancelPayment(ctx, s.awaitingAuth); err != nil {
			return compensationFailed(ctx, CompensationFailure{OrderID: s.order.OrderID, Amount: s.order.Amount}, err)
		}
	}
	if s.charge == inDoubt {
		rec, err := s.reconcile(ctx, in)
		if err != nil {
			return compensationFailed(ctx, CompensationFailure{OrderID: s.order.OrderID, Amount: s.order.Amount}, err)
		}
		if rec.Outcome == activities.Charged {
			s.charged(rec.PaymentIntentID)
		}
	}
	c := cancellation{orderID: s.order.OrderID, eventID: s.in.EventID, sequence: s.in.Sequence,
		stage: func(Stage) {}} // the saga's stage stays "compensating"
	if s.status.Charged {
		c.refund = &activities.RefundInput{ChargeEventID: s.in.EventID, OrderID: s.order.OrderID,
			PaymentIntentID: s.status.PaymentIntentID, Amount: s.order.Amount}
	}
	refundID, _, err := refundThenProjectCancelled(ctx, c)
	var rerr errRefund
	switch {
	case errors.As(err, &rerr):
		s.setStage(ctx, StageCompensationFailed)
		return compensationFailed(ctx, CompensationFailure{
			OrderID: s.order.OrderID, PaymentIntentID: s.status.PaymentIntentID, Amount: s.order.Amount}, rerr.err)
	case err != nil:
		return err
	}
	if err := s.releaseStock(ctx); err != nil {
		return err
	}
	// The refund was accepted; a webhook may already say it failed
	// ([ChangePaymentIncidents]): then the compensation failed after all,
	// as if the provider had refused the refund at once.
	failed, err := s.takeIncidents(ctx)
	if err != nil {
		return err
	}
	if failed != nil {
		s.setStage(ctx, StageCompensationFailed)
		f, cause := lateRefundFailure(*failed)
		f.OrderID, f.Amount = s.order.OrderID, s.order.Amount
		if f.PaymentIntentID == "" {
			f.PaymentIntentID = s.status.PaymentIntentID
		}
		return compensationFailed(ctx, f, cause)
	}
	refunded := c.refund != nil
	s.setStage(ctx, StageCompensated)
	workflow.GetLogger(ctx).Warn("saga cancelled through Temporal; its charge was refunded",
		"order_id", s.order.OrderID, "payment_intent_id", s.status.PaymentIntentID, "refund_id", refundID)
	return temporal.NewCanceledError(handoff.SagaResult{
		OrderID: s.order.OrderID, Outcome: handoff.SagaCompensated, Charged: s.status.Charged,
		PaymentIntentID: s.status.PaymentIntentID, Amount: s.order.Amount, Currency: s.order.Currency,
		Refunded: refunded, RefundID: refundID,
	})
}
