package activities

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/failpoints"
	"github.com/outflow/outflow/internal/namedsql"
	"github.com/outflow/outflow/orders"
)

//go:embed project_order.sql
var sqlFiles embed.FS

var queries = namedsql.MustLoad(sqlFiles, "project_order.sql")

// OrderStep is one status change the projection applies for an event. One
// event drives several steps (OrderCreated: paid, then confirmed), so each
// step is its own inbox consumer.
type OrderStep string

// Projection steps.
const (
	// StepPaid: pending → paid, records the PaymentIntent. Not final: the
	// saga's event goes on.
	StepPaid OrderStep = "paid"
	// StepConfirmed: paid → confirmed (the confirmation email went out). Final.
	StepConfirmed OrderStep = "confirmed"
	// StepPaymentFailed: pending → payment_failed. Final.
	StepPaymentFailed OrderStep = "payment_failed"
	// StepSagaStopped: no status change; closes the OrderCreated event of a
	// saga stopped by a cancel, so the cancel event (next in sequence) can
	// apply. Final.
	StepSagaStopped OrderStep = "saga_stopped"
	// StepCancelled: any status → cancelled, records the refund. Final.
	StepCancelled OrderStep = "cancelled"
)

// ConsumerName is the inbox consumer of a step: one per step, because one
// event drives several status changes and each must apply once.
func ConsumerName(s OrderStep) string { return "order_status." + string(s) }

// final reports whether the step is the last one of its event, the one that
// advances the order's applied_sequence.
func (s OrderStep) final() bool { return s != StepPaid }

// transitions says, per step, from which statuses it may apply and which
// status it sets ("" keeps the status). Anything else is a bug, or a run
// that should not exist (a replayed payment run on a cancelled order),
// reported as a non-retryable IllegalTransition; in particular nothing but
// the two closing steps applies to a cancelled order. The closing steps,
// StepSagaStopped and StepCancelled, are legal from any status because they
// legitimately arrive late: the cancel workflow closes a saga that got
// further than it knew, and a saga compensating a Temporal cancel projects
// cancelled after the cancel workflow may already have.
var transitions = map[OrderStep]struct {
	from []orders.Status
	to   orders.Status
}{
	StepPaid:          {from: []orders.Status{orders.StatusPending}, to: orders.StatusPaid},
	StepConfirmed:     {from: []orders.Status{orders.StatusPaid}, to: orders.StatusConfirmed},
	StepPaymentFailed: {from: []orders.Status{orders.StatusPending}, to: orders.StatusPaymentFailed},
	StepSagaStopped:   {from: allStatuses, to: ""},
	StepCancelled:     {from: allStatuses, to: orders.StatusCancelled},
}

var allStatuses = []orders.Status{orders.StatusPending, orders.StatusPaid, orders.StatusConfirmed,
	orders.StatusPaymentFailed, orders.StatusCancelled}

// ProjectOrderInput is one projection step of one event.
type ProjectOrderInput struct {
	EventID string    `json:"event_id"`
	OrderID string    `json:"order_id"`
	Step    OrderStep `json:"step"`
	// Sequence is the event's aggregate_sequence. Zero: the order row
	// supplies it, for the order's OrderCreated and OrderCancelled events
	// only (any other event is a non-retryable SequenceUnknown error).
	Sequence        int64  `json:"sequence"`
	PaymentIntentID string `json:"payment_intent_id,omitempty"`
	RefundID        string `json:"refund_id,omitempty"`
}

// ProjectOrderResult says what the step did.
type ProjectOrderResult struct {
	// Applied: this call changed the order.
	Applied bool `json:"applied"`
	// Duplicate: the inbox already held this (consumer, event); no effect.
	Duplicate bool `json:"duplicate,omitempty"`
	// Stale: the event's stream position was already closed by a final step;
	// acknowledged without effect.
	Stale bool `json:"stale,omitempty"`
	// Status is the order's status after the call.
	Status string `json:"status"`
	// CustomerEmail is the order's, for the emails that follow a step.
	CustomerEmail string `json:"customer_email"`
}

// projectedOrder is the order row as the projection locks it.
type projectedOrder struct {
	status         orders.Status
	applied        int64
	customerEmail  string
	createdEventID uuid.UUID
	createdSeq     int64
	cancelEventID  *uuid.UUID
	cancelSeq      *int64
}

// sequenceOf is the sequence of the order's event eventID, for a step that
// carries none. The order row knows its two events' sequences, so this holds
// after retention cleanup deleted their outbox rows.
func (o *projectedOrder) sequenceOf(orderID, eventID string) (int64, error) {
	id, err := uuid.Parse(eventID)
	switch {
	case err == nil && id == o.createdEventID:
		return o.createdSeq, nil
	case err == nil && o.cancelEventID != nil && id == *o.cancelEventID:
		if o.cancelSeq == nil {
			return 0, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("order %s: cancel event %s was recorded before its sequence was: pass the sequence explicitly", orderID, eventID),
				ErrTypeSequenceUnknown, nil)
		}
		return *o.cancelSeq, nil
	}
	return 0, temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("event %s is neither the created nor the cancel event of order %s, so its sequence is unknown: pass it explicitly", eventID, orderID),
		ErrTypeSequenceUnknown, nil)
}

// ProjectOrder applies one status change of one event to the order, through
// the inbox: the processed_events row and the change commit in one
// transaction, so a redelivered step is acknowledged without effect.
//
// A step the order's status does not allow (the transition table) is a
// non-retryable IllegalTransition error, logged at error level and counted
// in outflow_illegal_transitions_total{step}, whatever its sequence: a late
// step is no excuse for an impossible one. It is checked right after the
// inbox, so only a redelivery of a step that did apply is acknowledged
// without a look at the status.
//
// Events of one order apply in sequence order: a step of an event whose
// sequence is beyond applied_sequence+1 is a retryable SequenceGap error (an
// earlier event is still in flight; it is never skipped, unless an operator
// skipped it, see orders.SettleSkippedTx), a legal step of an event at or
// below applied_sequence is acknowledged as Stale, and the final step of an
// event advances applied_sequence.
func (a *Activities) ProjectOrder(ctx context.Context, in ProjectOrderInput) (ProjectOrderResult, error) {
	if a.DB == nil {
		return ProjectOrderResult{}, errors.New("activities: no database configured (set DATABASE_URL)")
	}
	tr, ok := transitions[in.Step]
	if !ok {
		return ProjectOrderResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("unknown projection step %q", in.Step), ErrTypeIllegalTransition, nil)
	}
	consumer := ConsumerName(in.Step)
	var (
		res     ProjectOrderResult
		illegal bool
	)
	err := pgx.BeginFunc(ctx, a.DB, func(tx pgx.Tx) error {
		res, illegal = ProjectOrderResult{}, false
		var inserted string
		err := tx.QueryRow(ctx, queries.Get("InboxInsert"), consumer, in.EventID).Scan(&inserted)
		isNew := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var o projectedOrder
		if err := tx.QueryRow(ctx, queries.Get("OrderLock"), in.OrderID).Scan(&o.status, &o.applied, &o.customerEmail,
			&o.createdEventID, &o.createdSeq, &o.cancelEventID, &o.cancelSeq); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("order %s does not exist", in.OrderID), ErrTypeOrderNotFound, nil)
			}
			return err
		}
		res.Status, res.CustomerEmail = string(o.status), o.customerEmail
		if !isNew {
			res.Duplicate = true
			return nil
		}
		if !slices.Contains(tr.from, o.status) {
			// Rolls the inbox row back: a redelivery is refused again.
			illegal = true
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("order %s: step %s of event %s is not allowed from status %s", in.OrderID, in.Step, in.EventID, o.status),
				ErrTypeIllegalTransition, nil)
		}
		seq := in.Sequence
		if seq == 0 {
			if seq, err = o.sequenceOf(in.OrderID, in.EventID); err != nil {
				return err
			}
		}
		switch {
		case seq > o.applied+1:
			// Rolls the inbox row back with everything else: the step will
			// be delivered again once the earlier event has applied.
			return temporal.NewApplicationError(
				fmt.Sprintf("order %s: event %s has sequence %d but only %d is applied; waiting for the earlier event",
					in.OrderID, in.EventID, seq, o.applied), ErrTypeSequenceGap)
		case seq <= o.applied:
			res.Stale = true
			return nil
		}
		if tr.to != "" {
			res.Status = string(tr.to)
		}
		var finalSeq int64
		if in.Step.final() {
			finalSeq = seq
		}
		if _, err := tx.Exec(ctx, queries.Get("OrderApply"), in.OrderID, res.Status,
			nullable(in.PaymentIntentID), nullable(in.RefundID), finalSeq); err != nil {
			return err
		}
		res.Applied = true
		return nil
	})
	if illegal {
		a.metrics().IllegalTransitions.WithLabelValues(string(in.Step)).Inc()
		logger(ctx).Error("illegal order transition refused: a step the order's status does not allow; investigate the run that sent it",
			"order_id", in.OrderID, "event_id", in.EventID, "step", string(in.Step), "status", res.Status, "sequence", in.Sequence)
	}
	if err != nil {
		return ProjectOrderResult{}, err
	}
	if res.Duplicate {
		a.metrics().InboxDuplicates.WithLabelValues(consumer).Inc()
		if activity.IsActivity(ctx) {
			activity.GetLogger(ctx).Info("inbox duplicate acknowledged without effect", "consumer", consumer, "event_id", in.EventID, "order_id", in.OrderID)
		}
	}
	if err := a.failpoint(ctx, failpoints.ConsumerAfterCommit); err != nil {
		return ProjectOrderResult{}, err // the retry finds the inbox row
	}
	return res, nil
}

// logger is the activity's logger, or the process's default one when ctx is
// not an activity's (a direct call, as in tests).
func logger(ctx context.Context) log.Logger {
	if activity.IsActivity(ctx) {
		return activity.GetLogger(ctx)
	}
	return slog.Default()
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
