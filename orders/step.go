package orders

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/inbox"
)

// Step is one status change the order projection applies for an event. One
// event drives several steps (OrderCreated: paid, then confirmed), so each
// step is its own inbox consumer ([ConsumerName]). The values are recorded
// in Temporal histories (activities.OrderStep is this type): never rename
// one.
type Step string

// Projection steps.
const (
	// StepPaid: pending → paid, records the PaymentIntent. Not final: the
	// saga's event goes on.
	StepPaid Step = "paid"
	// StepConfirmed: paid → confirmed (the confirmation email went out). Final.
	StepConfirmed Step = "confirmed"
	// StepPaymentFailed: pending → payment_failed. Final.
	StepPaymentFailed Step = "payment_failed"
	// StepSagaStopped: no status change; closes the OrderCreated event of a
	// saga stopped by a cancel, so the cancel event (next in sequence) can
	// apply. Final.
	StepSagaStopped Step = "saga_stopped"
	// StepCancelled: any status → cancelled, records the refund. Final.
	StepCancelled Step = "cancelled"
	// StepDisputed: no status change; records the order's dispute
	// (disputed_at, dispute_id), from a charge.dispute.created webhook.
	// Unsequenced (see [Step.unsequenced]).
	StepDisputed Step = "disputed"
	// StepRefundFailed: no status change; records that the order's refund
	// failed after the provider accepted it (refund_failed_at), from a
	// charge.refund.updated webhook with status failed. Unsequenced.
	StepRefundFailed Step = "refund_failed"
)

// ConsumerName is the inbox consumer of a step (the name [inbox.Inbox.Record]
// records it under): one per step, because one event drives several status
// changes and each must apply once.
func ConsumerName(s Step) string { return "order_status." + string(s) }

// final reports whether the step is the last one of its event, the one that
// advances the order's applied_sequence.
func (s Step) final() bool { return s != StepPaid && !s.unsequenced() }

// unsequenced reports whether the step records a fact of the order's
// payment stream (a webhook's PaymentWebhookReceived, aggregate
// [AggregatePayment]) rather than an event of the order's own: it is
// applied once per event through the inbox, from any status, and neither
// waits for nor moves applied_sequence.
func (s Step) unsequenced() bool { return s == StepDisputed || s == StepRefundFailed }

// transitions says, per step, from which statuses it may apply and which
// status it sets ("" keeps the status). Anything else is a bug, or a run
// that should not exist (a replayed payment run on a cancelled order),
// refused with an [*IllegalTransitionError]; in particular nothing but the
// two closing steps applies to a cancelled order. The closing steps,
// StepSagaStopped and StepCancelled, are legal from any status because they
// legitimately arrive late: the cancel workflow closes a saga that got
// further than it knew, and a saga compensating a Temporal cancel projects
// cancelled after the cancel workflow may already have.
var transitions = map[Step]struct {
	from []Status
	to   Status
}{
	StepPaid:          {from: []Status{StatusPending}, to: StatusPaid},
	StepConfirmed:     {from: []Status{StatusPaid}, to: StatusConfirmed},
	StepPaymentFailed: {from: []Status{StatusPending}, to: StatusPaymentFailed},
	StepSagaStopped:   {from: allStatuses, to: ""},
	StepCancelled:     {from: allStatuses, to: StatusCancelled},
	// A dispute or a failed refund can come at any point after the charge,
	// before or after the cancel's projection.
	StepDisputed:     {from: allStatuses, to: ""},
	StepRefundFailed: {from: allStatuses, to: ""},
}

var allStatuses = []Status{StatusPending, StatusPaid, StatusConfirmed, StatusPaymentFailed, StatusCancelled}

// Errors of [ApplyStep] and [ApplyStepTx], each wrapped with the order, the
// event and the step. Along with [ErrOrderNotFound] (the order row does not
// exist), they are final but for ErrSequenceGap.
var (
	// ErrIllegalTransition: the step is unknown, or the order's status does
	// not allow it (see [IllegalTransitionError]). A bug, or a run that should
	// not exist; final.
	ErrIllegalTransition = errors.New("orders: illegal transition")
	// ErrSequenceGap: the step's event is beyond applied_sequence+1, an
	// earlier event of the order has not applied yet. Retry the step: the
	// projection waits for the earlier event, it never skips one (unless an
	// operator did, see [SettleSkippedTx]).
	ErrSequenceGap = errors.New("orders: sequence gap")
	// ErrSequenceUnknown: a step without a sequence names an event the order
	// row has no sequence for (neither its created nor its cancel event, or a
	// cancel recorded before its sequence was). Final: the caller must pass
	// the sequence.
	ErrSequenceUnknown = errors.New("orders: sequence unknown")
)

// IllegalTransitionError is the error of a step that the order's status does
// not allow. It wraps [ErrIllegalTransition] and carries the status that
// refused the step, for the caller's report of it.
type IllegalTransitionError struct {
	OrderID, EventID uuid.UUID
	Step             Step
	// Status is the order's status, which the step may not leave.
	Status Status
}

// Error implements error.
func (e *IllegalTransitionError) Error() string {
	return fmt.Sprintf("%v: order %s: step %s of event %s is not allowed from status %s",
		ErrIllegalTransition, e.OrderID, e.Step, e.EventID, e.Status)
}

// Unwrap makes errors.Is(err, ErrIllegalTransition) hold.
func (e *IllegalTransitionError) Unwrap() error { return ErrIllegalTransition }

// StepInput is one projection step of one event.
type StepInput struct {
	OrderID uuid.UUID
	// EventID is the event whose step this is: with the step's consumer, the
	// inbox key.
	EventID uuid.UUID
	Step    Step
	// Sequence is the event's aggregate_sequence. Zero: the order row
	// supplies it, for the order's OrderCreated and OrderCancelled events
	// only (any other event is [ErrSequenceUnknown]).
	Sequence int64
	// PaymentIntentID, if not "", is recorded as the order's charge.
	PaymentIntentID string
	// RefundID, if not "", is recorded as the order's refund.
	RefundID string
	// DisputeID, if not "", is recorded as the order's dispute
	// ([StepDisputed]).
	DisputeID string
}

// StepResult says what a step did.
type StepResult struct {
	// Applied: this call changed the order.
	Applied bool
	// Duplicate: the inbox already held this (consumer, event); no effect.
	Duplicate bool
	// Stale: the event's stream position was already closed by a final
	// step; acknowledged without effect.
	Stale bool
	// Status is the order's status after the call.
	Status Status
	// CustomerEmail is the order's, for the emails that follow a step.
	CustomerEmail string
}

// ApplyStep is [ApplyStepTx] in a transaction of its own on db (a savepoint
// if db is a pgx.Tx): on any error nothing is written, not even the step's
// inbox row, so a redelivery is judged again.
func ApplyStep(ctx context.Context, db DB, ib *inbox.Inbox, in StepInput) (StepResult, error) {
	if _, ok := transitions[in.Step]; !ok {
		return StepResult{}, unknownStep(in.Step)
	}
	var res StepResult
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var err error
		res, err = ApplyStepTx(ctx, tx, ib, in)
		return err
	})
	if err != nil {
		return StepResult{}, err
	}
	return res, nil
}

// stepOrder is the order row as a step locks it.
type stepOrder struct {
	Status          Status     `db:"status"`
	AppliedSequence int64      `db:"applied_sequence"`
	CustomerEmail   string     `db:"customer_email"`
	CreatedEventID  uuid.UUID  `db:"created_event_id"`
	CreatedSequence int64      `db:"created_sequence"`
	CancelEventID   *uuid.UUID `db:"cancel_event_id"`
	CancelSequence  *int64     `db:"cancel_event_sequence"`
}

// ApplyStepTx applies one status change of one event to the order inside
// tx, through the inbox ib: its row (consumer [ConsumerName](in.Step), the
// event; [inbox.Inbox.Record], which counts a duplicate) and the change are
// written in tx, so once tx commits a redelivered step is acknowledged as a
// Duplicate without effect. The order row stays locked until tx ends, which serialises every
// step of one order (and its skips, [SettleSkippedTx]).
//
// A step the order's status does not allow (the transition table) is an
// [*IllegalTransitionError], whatever its sequence: a late step is no excuse
// for an impossible one. It is checked right after the inbox, so only a
// redelivery of a step that did apply is acknowledged without a look at the
// status.
//
// The unsequenced steps ([StepDisputed], [StepRefundFailed]) stop there:
// they record their fact and are Applied, whatever the sequence.
//
// Events of one order apply in sequence order: a step of an event whose
// sequence is beyond applied_sequence+1 is [ErrSequenceGap] (an earlier event
// is still in flight; it is never skipped, unless an operator skipped it, see
// [SettleSkippedTx]), a legal step of an event at or below applied_sequence
// is acknowledged as Stale, and the final step of an event advances
// applied_sequence, past the skipped sequences that directly follow too.
// Sequence 0 is resolved from the order row, which knows its two events'
// sequences after retention cleanup deleted their outbox rows. A missing
// order is [ErrOrderNotFound].
//
// Any error leaves the step's inbox row in tx: the caller must roll tx back
// (pgx.BeginFunc does), or the refused step would be acknowledged as a
// duplicate when it is delivered again.
func ApplyStepTx(ctx context.Context, tx pgx.Tx, ib *inbox.Inbox, in StepInput) (StepResult, error) {
	tr, ok := transitions[in.Step]
	if !ok {
		return StepResult{}, unknownStep(in.Step)
	}
	isNew, err := ib.Record(ctx, tx, ConsumerName(in.Step), in.EventID)
	if err != nil {
		return StepResult{}, fmt.Errorf("orders: inbox of step %s of event %s: %w", in.Step, in.EventID, err)
	}
	o, err := qStepLockOrder.One(ctx, tx, orderIDArgs{ID: in.OrderID})
	if errors.Is(err, pgx.ErrNoRows) {
		return StepResult{}, fmt.Errorf("%w: order %s does not exist", ErrOrderNotFound, in.OrderID)
	}
	if err != nil {
		return StepResult{}, fmt.Errorf("orders: lock order %s: %w", in.OrderID, err)
	}
	res := StepResult{Status: o.Status, CustomerEmail: o.CustomerEmail}
	if !isNew {
		res.Duplicate = true
		return res, nil
	}
	if !slices.Contains(tr.from, o.Status) {
		return StepResult{}, &IllegalTransitionError{OrderID: in.OrderID, EventID: in.EventID, Step: in.Step, Status: o.Status}
	}
	if in.Step.unsequenced() {
		if _, err := qStepMark.Exec(ctx, tx, stepMarkArgs{
			ID: in.OrderID, Disputed: in.Step == StepDisputed, RefundFailed: in.Step == StepRefundFailed,
			DisputeID: nullable(in.DisputeID),
		}); err != nil {
			return StepResult{}, fmt.Errorf("orders: apply step %s of event %s to order %s: %w", in.Step, in.EventID, in.OrderID, err)
		}
		res.Applied = true
		return res, nil
	}
	seq := in.Sequence
	if seq == 0 {
		if seq, err = o.sequenceOf(in.OrderID, in.EventID); err != nil {
			return StepResult{}, err
		}
	}
	switch {
	case seq > o.AppliedSequence+1:
		// The caller's rollback takes the inbox row with it: the step will
		// be delivered again once the earlier event has applied.
		return StepResult{}, fmt.Errorf("%w: order %s: event %s has sequence %d but only %d is applied; waiting for the earlier event",
			ErrSequenceGap, in.OrderID, in.EventID, seq, o.AppliedSequence)
	case seq <= o.AppliedSequence:
		res.Stale = true
		return res, nil
	}
	if tr.to != "" {
		res.Status = tr.to
	}
	var finalSeq int64
	if in.Step.final() {
		finalSeq = seq
	}
	if _, err := qStepApply.Exec(ctx, tx, stepApplyArgs{
		ID:              in.OrderID,
		Status:          res.Status,
		PaymentIntentID: nullable(in.PaymentIntentID),
		RefundID:        nullable(in.RefundID),
		FinalSequence:   finalSeq,
	}); err != nil {
		return StepResult{}, fmt.Errorf("orders: apply step %s of event %s to order %s: %w", in.Step, in.EventID, in.OrderID, err)
	}
	res.Applied = true
	return res, nil
}

// sequenceOf is the sequence of the order's event eventID, for a step that
// carries none. The order row knows its two events' sequences, so this holds
// after retention cleanup deleted their outbox rows.
func (o *stepOrder) sequenceOf(orderID, eventID uuid.UUID) (int64, error) {
	switch {
	case eventID == o.CreatedEventID:
		return o.CreatedSequence, nil
	case o.CancelEventID != nil && eventID == *o.CancelEventID:
		if o.CancelSequence == nil {
			return 0, fmt.Errorf("%w: order %s: cancel event %s was recorded before its sequence was: pass the sequence explicitly",
				ErrSequenceUnknown, orderID, eventID)
		}
		return *o.CancelSequence, nil
	}
	return 0, fmt.Errorf("%w: event %s is neither the created nor the cancel event of order %s, so its sequence is unknown: pass it explicitly",
		ErrSequenceUnknown, eventID, orderID)
}

func unknownStep(s Step) error {
	return fmt.Errorf("%w: unknown projection step %q", ErrIllegalTransition, s)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
