package activities

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/failpoints"
	"github.com/outflow/outflow/internal/namedsql"
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
// status it sets ("" keeps the status). Anything else is a bug, reported as a
// non-retryable IllegalTransition; in particular nothing leaves cancelled.
var transitions = map[OrderStep]struct {
	from []string
	to   string
}{
	StepPaid:          {from: []string{"pending"}, to: "paid"},
	StepConfirmed:     {from: []string{"paid"}, to: "confirmed"},
	StepPaymentFailed: {from: []string{"pending"}, to: "payment_failed"},
	StepSagaStopped:   {from: []string{"pending", "paid", "confirmed", "payment_failed", "cancelled"}, to: ""},
	StepCancelled:     {from: []string{"pending", "paid", "confirmed", "payment_failed", "cancelled"}, to: "cancelled"},
}

// ProjectOrderInput is one projection step of one event.
type ProjectOrderInput struct {
	EventID string    `json:"event_id"`
	OrderID string    `json:"order_id"`
	Step    OrderStep `json:"step"`
	// Sequence is the event's aggregate_sequence. Zero: look it up in
	// outbox_events by EventID.
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

// ProjectOrder applies one status change of one event to the order, through
// the inbox: the processed_events row and the change commit in one
// transaction, so a redelivered step is acknowledged without effect.
//
// Events of one order apply in sequence order: a step of an event whose
// sequence is beyond applied_sequence+1 is a retryable SequenceGap error (an
// earlier event is still in flight; it is never skipped), and the final step
// of an event advances applied_sequence.
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
	var res ProjectOrderResult
	err := pgx.BeginFunc(ctx, a.DB, func(tx pgx.Tx) error {
		res = ProjectOrderResult{}
		seq := in.Sequence
		if seq == 0 {
			if err := tx.QueryRow(ctx, queries.Get("EventSequence"), in.EventID).Scan(&seq); err != nil {
				if errors.Is(err, pgx.ErrNoRows) {
					return temporal.NewNonRetryableApplicationError(
						fmt.Sprintf("event %s is not in outbox_events: pass its sequence explicitly", in.EventID), ErrTypeOrderNotFound, nil)
				}
				return err
			}
		}
		var inserted string
		err := tx.QueryRow(ctx, queries.Get("InboxInsert"), consumer, in.EventID).Scan(&inserted)
		isNew := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var applied int64
		if err := tx.QueryRow(ctx, queries.Get("OrderLock"), in.OrderID).Scan(&res.Status, &applied, &res.CustomerEmail); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("order %s does not exist", in.OrderID), ErrTypeOrderNotFound, nil)
			}
			return err
		}
		switch {
		case !isNew:
			res.Duplicate = true
			return nil
		case seq > applied+1:
			// Rolls the inbox row back with everything else: the step will
			// be delivered again once the earlier event has applied.
			return temporal.NewApplicationError(
				fmt.Sprintf("order %s: event %s has sequence %d but only %d is applied; waiting for the earlier event",
					in.OrderID, in.EventID, seq, applied), ErrTypeSequenceGap)
		case seq <= applied:
			res.Stale = true
			return nil
		}
		if !contains(tr.from, res.Status) {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("order %s: step %s of event %s is not allowed from status %s", in.OrderID, in.Step, in.EventID, res.Status),
				ErrTypeIllegalTransition, nil)
		}
		if tr.to != "" {
			res.Status = tr.to
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

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
