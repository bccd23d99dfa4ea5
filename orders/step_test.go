package orders

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/inbox"
	"github.com/outflow/outflow/outbox/outboxtest"
)

// stepFixture is one order made by the order service: pending, its
// OrderCreated event at sequence 1; and the inbox the steps go through.
type stepFixture struct {
	testBundle
	ib             *inbox.Inbox
	order, created uuid.UUID
}

func setupStep(t *testing.T) stepFixture {
	t.Helper()
	b := setup(t)
	created, err := CreateOrder(b.ctx, b.pool, validParams())
	require.NoError(t, err)
	ib, err := inbox.New(nil)
	require.NoError(t, err)
	return stepFixture{testBundle: b, ib: ib, order: created.OrderID, created: created.EventID}
}

func (f stepFixture) apply(t *testing.T, event uuid.UUID, seq int64, step Step) (StepResult, error) {
	t.Helper()
	in := StepInput{OrderID: f.order, EventID: event, Step: step, Sequence: seq}
	switch step {
	case StepPaid:
		in.PaymentIntentID = "pi_1"
	case StepCancelled:
		in.RefundID = "re_1"
	}
	return ApplyStep(f.ctx, f.pool, f.ib, in)
}

// stepRow is what the steps write on the order row.
type stepRow struct {
	Status          Status  `db:"status"`
	AppliedSequence int64   `db:"applied_sequence"`
	PaymentIntentID *string `db:"payment_intent_id"`
	RefundID        *string `db:"refund_id"`
}

func (f stepFixture) row(t *testing.T) stepRow {
	t.Helper()
	rows, err := f.pool.Query(f.ctx, `SELECT status, applied_sequence, payment_intent_id, refund_id FROM orders WHERE id = $1`, f.order)
	require.NoError(t, err)
	r, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[stepRow])
	require.NoError(t, err)
	return r
}

// recorded reports whether the inbox holds the step's consumer for the
// event. It asks through an inbox of its own, so the fixture's inbox counts
// only the steps' duplicates.
func (f stepFixture) recorded(t *testing.T, step Step, event uuid.UUID) bool {
	t.Helper()
	ib, err := inbox.New(nil)
	require.NoError(t, err)
	seen, err := ib.Seen(f.ctx, f.pool, ConsumerName(step), event)
	require.NoError(t, err)
	return seen
}

// TestConsumerNames: the inbox consumers are the keys of the inbox rows
// already written and must not change.
func TestConsumerNames(t *testing.T) {
	t.Parallel()
	for step, want := range map[Step]string{
		StepPaid:          "order_status.paid",
		StepConfirmed:     "order_status.confirmed",
		StepPaymentFailed: "order_status.payment_failed",
		StepSagaStopped:   "order_status.saga_stopped",
		StepCancelled:     "order_status.cancelled",
	} {
		require.Equal(t, want, ConsumerName(step))
	}
}

// TestApplyStepTransitionTable tries every step from every status: the
// legal ones apply and set their status, the others are an
// IllegalTransitionError naming the status, and leave nothing behind, not
// even their inbox row.
func TestApplyStepTransitionTable(t *testing.T) {
	t.Parallel()
	legal := map[Step]map[Status]Status{ // step → from → to
		StepPaid:          {StatusPending: StatusPaid},
		StepConfirmed:     {StatusPaid: StatusConfirmed},
		StepPaymentFailed: {StatusPending: StatusPaymentFailed},
		StepSagaStopped:   {},
		StepCancelled:     {},
		StepDisputed:      {},
		StepRefundFailed:  {},
	}
	for _, s := range allStatuses {
		legal[StepSagaStopped][s] = s
		legal[StepCancelled][s] = StatusCancelled
		legal[StepDisputed][s] = s
		legal[StepRefundFailed][s] = s
	}
	f := setupStep(t)
	for step, from := range legal {
		for _, status := range allStatuses {
			t.Run(fmt.Sprintf("%s from %s", step, status), func(t *testing.T) {
				created, err := CreateOrder(f.ctx, f.pool, validParams())
				require.NoError(t, err)
				_, err = f.pool.Exec(f.ctx, `UPDATE orders SET status = $2 WHERE id = $1`, created.OrderID, status)
				require.NoError(t, err)
				g := stepFixture{testBundle: f.testBundle, ib: f.ib, order: created.OrderID, created: created.EventID}

				res, err := g.apply(t, g.created, 1, step)
				to, ok := from[status]
				if !ok {
					require.ErrorIs(t, err, ErrIllegalTransition)
					var illegal *IllegalTransitionError
					require.ErrorAs(t, err, &illegal)
					require.Equal(t, IllegalTransitionError{OrderID: g.order, EventID: g.created, Step: step, Status: status}, *illegal)
					require.Equal(t, stepRow{Status: status}, g.row(t))
					require.False(t, g.recorded(t, step, g.created), "a refused step leaves no inbox row")
					return
				}
				require.NoError(t, err)
				require.Equal(t, StepResult{Applied: true, Status: to, CustomerEmail: "ann@example.com"}, res)
				r := g.row(t)
				require.Equal(t, to, r.Status)
				require.EqualValues(t, map[bool]int64{true: 1}[step.final()], r.AppliedSequence, "only a final step closes the event")
				require.True(t, g.recorded(t, step, g.created))
			})
		}
	}
}

// The webhook steps record their fact once per event, from any status,
// whatever the sequence: they neither wait for the order's stream (a
// sequence far beyond applied) nor move it, and a second dispute keeps
// the first's id.
func TestApplyStepUnsequencedSteps(t *testing.T) {
	t.Parallel()
	f := setupStep(t)
	dispute, refund, second := uuid.New(), uuid.New(), uuid.New()
	res, err := ApplyStep(f.ctx, f.pool, f.ib, StepInput{OrderID: f.order, EventID: dispute, Step: StepDisputed, DisputeID: "dp_1", Sequence: 7})
	require.NoError(t, err)
	require.Equal(t, StepResult{Applied: true, Status: StatusPending, CustomerEmail: "ann@example.com"}, res)
	res, err = ApplyStep(f.ctx, f.pool, f.ib, StepInput{OrderID: f.order, EventID: dispute, Step: StepDisputed, DisputeID: "dp_1"})
	require.NoError(t, err)
	require.True(t, res.Duplicate)
	_, err = ApplyStep(f.ctx, f.pool, f.ib, StepInput{OrderID: f.order, EventID: second, Step: StepDisputed, DisputeID: "dp_2"})
	require.NoError(t, err)
	res, err = ApplyStep(f.ctx, f.pool, f.ib, StepInput{OrderID: f.order, EventID: refund, Step: StepRefundFailed})
	require.NoError(t, err)
	require.True(t, res.Applied)

	type markRow struct {
		Status          Status  `db:"status"`
		AppliedSequence int64   `db:"applied_sequence"`
		DisputeID       *string `db:"dispute_id"`
		Disputed        bool    `db:"disputed"`
		RefundFailed    bool    `db:"refund_failed"`
	}
	rows, err := f.pool.Query(f.ctx, `SELECT status, applied_sequence, dispute_id, disputed_at IS NOT NULL AS disputed,
		refund_failed_at IS NOT NULL AS refund_failed FROM orders WHERE id = $1`, f.order)
	require.NoError(t, err)
	row, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[markRow])
	require.NoError(t, err)
	require.Equal(t, StatusPending, row.Status)
	require.Zero(t, row.AppliedSequence, "the order's stream did not move")
	require.Equal(t, "dp_1", *row.DisputeID)
	require.True(t, row.Disputed)
	require.True(t, row.RefundFailed)
	require.True(t, f.recorded(t, StepDisputed, dispute))
}

func TestApplyStepUnknownStep(t *testing.T) {
	t.Parallel()
	f := setupStep(t)
	_, err := f.apply(t, f.created, 1, "shipped")
	require.ErrorIs(t, err, ErrIllegalTransition)
	require.ErrorContains(t, err, `unknown projection step "shipped"`)
	var illegal *IllegalTransitionError
	require.False(t, errors.As(err, &illegal), "no status refused it")
}

// A redelivered step finds its inbox row: acknowledged without effect and
// without a look at the status, which the step itself may have moved on.
func TestApplyStepDuplicate(t *testing.T) {
	t.Parallel()
	f := setupStep(t)
	_, err := f.apply(t, f.created, 1, StepPaid)
	require.NoError(t, err)
	_, err = f.apply(t, f.created, 1, StepConfirmed)
	require.NoError(t, err)

	res, err := f.apply(t, f.created, 1, StepPaid)
	require.NoError(t, err, "paid is not legal from confirmed, but this paid already applied")
	require.Equal(t, StepResult{Duplicate: true, Status: StatusConfirmed, CustomerEmail: "ann@example.com"}, res)
	require.Equal(t, stepRow{Status: StatusConfirmed, AppliedSequence: 1, PaymentIntentID: ptr("pi_1")}, f.row(t))
}

// An event beyond the next one waits: ErrSequenceGap, nothing written, not
// even its inbox row, and it applies once the earlier event's final step
// has.
func TestApplyStepSequenceGap(t *testing.T) {
	t.Parallel()
	f := setupStep(t)
	cancelEvent := uuid.New()

	_, err := f.apply(t, cancelEvent, 2, StepCancelled)
	require.ErrorIs(t, err, ErrSequenceGap)
	require.ErrorContains(t, err, "has sequence 2 but only 0 is applied")
	require.Equal(t, stepRow{Status: StatusPending}, f.row(t))
	require.False(t, f.recorded(t, StepCancelled, cancelEvent))

	_, err = f.apply(t, f.created, 1, StepPaid)
	require.NoError(t, err)
	_, err = f.apply(t, cancelEvent, 2, StepCancelled)
	require.ErrorIs(t, err, ErrSequenceGap, "paid is not final")

	_, err = f.apply(t, f.created, 1, StepConfirmed)
	require.NoError(t, err)
	res, err := f.apply(t, cancelEvent, 2, StepCancelled)
	require.NoError(t, err)
	require.True(t, res.Applied)
	require.Equal(t, stepRow{Status: StatusCancelled, AppliedSequence: 2, PaymentIntentID: ptr("pi_1"), RefundID: ptr("re_1")}, f.row(t))
}

// A legal step of an event whose place is already closed (the cancel
// workflow closing a saga that got further than it knew) is acknowledged
// as Stale without effect.
func TestApplyStepStale(t *testing.T) {
	t.Parallel()
	f := setupStep(t)
	_, err := f.apply(t, f.created, 1, StepPaymentFailed)
	require.NoError(t, err)

	res, err := f.apply(t, f.created, 1, StepSagaStopped)
	require.NoError(t, err)
	require.Equal(t, StepResult{Stale: true, Status: StatusPaymentFailed, CustomerEmail: "ann@example.com"}, res)
	require.Equal(t, stepRow{Status: StatusPaymentFailed, AppliedSequence: 1}, f.row(t))
}

// Sequence 0: the order row knows the sequences of its created and cancel
// events, so the steps apply after retention cleanup deleted the events.
// Any other event, or a cancel recorded before its sequence was, is
// ErrSequenceUnknown.
func TestApplyStepSequenceZero(t *testing.T) {
	t.Parallel()
	f := setupStep(t)
	cancelled, err := CancelOrder(f.ctx, f.pool, f.order)
	require.NoError(t, err)
	outboxtest.DeleteEvents(t, f.pool, outboxtest.Match{}) // what retention cleanup does

	other := uuid.New()
	_, err = f.apply(t, other, 0, StepSagaStopped)
	require.ErrorIs(t, err, ErrSequenceUnknown)
	require.ErrorContains(t, err, fmt.Sprintf("event %s is neither the created nor the cancel event of order %s", other, f.order))

	res, err := f.apply(t, f.created, 0, StepSagaStopped)
	require.NoError(t, err)
	require.True(t, res.Applied)
	require.EqualValues(t, 1, f.row(t).AppliedSequence)

	_, err = f.pool.Exec(f.ctx, `UPDATE orders SET cancel_event_sequence = NULL WHERE id = $1`, f.order)
	require.NoError(t, err)
	_, err = f.apply(t, cancelled.EventID, 0, StepCancelled)
	require.ErrorIs(t, err, ErrSequenceUnknown)
	require.ErrorContains(t, err, "was recorded before its sequence was")

	_, err = f.pool.Exec(f.ctx, `UPDATE orders SET cancel_event_sequence = 2 WHERE id = $1`, f.order)
	require.NoError(t, err)
	res, err = f.apply(t, cancelled.EventID, 0, StepCancelled)
	require.NoError(t, err)
	require.True(t, res.Applied)
	require.Equal(t, stepRow{Status: StatusCancelled, AppliedSequence: 2, RefundID: ptr("re_1")}, f.row(t))
}

func TestApplyStepOrderNotFound(t *testing.T) {
	t.Parallel()
	f := setupStep(t)
	f.order = uuid.New()
	_, err := f.apply(t, f.created, 1, StepPaid)
	require.ErrorIs(t, err, ErrOrderNotFound)
	require.ErrorContains(t, err, f.order.String())
	require.False(t, f.recorded(t, StepPaid, f.created))
}

// Skipped sequences that directly follow an event count as applied when its
// final step applies, so the event behind them does not wait for them.
func TestApplyStepSettlesSkippedSequences(t *testing.T) {
	t.Parallel()
	f := setupStep(t)
	require.NoError(t, f.settle(t, AggregateType, f.order.String(), 2))
	require.NoError(t, f.settle(t, AggregateType, f.order.String(), 3))
	_, err := f.apply(t, uuid.New(), 4, StepCancelled)
	require.ErrorIs(t, err, ErrSequenceGap, "1 is still open")

	_, err = f.apply(t, f.created, 1, StepSagaStopped)
	require.NoError(t, err)
	require.EqualValues(t, 3, f.row(t).AppliedSequence, "the final step of 1 also closes the skipped 2 and 3")
	res, err := f.apply(t, uuid.New(), 4, StepCancelled)
	require.NoError(t, err)
	require.True(t, res.Applied)
	require.EqualValues(t, 4, f.row(t).AppliedSequence)
}

// ApplyStepTx joins the caller's transaction: the change and its inbox row
// commit or roll back with it.
func TestApplyStepTxJoinsCallerTransaction(t *testing.T) {
	t.Parallel()
	f := setupStep(t)
	in := StepInput{OrderID: f.order, EventID: f.created, Step: StepPaid, Sequence: 1, PaymentIntentID: "pi_1"}
	errForced := errors.New("forced rollback")
	err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
		res, err := ApplyStepTx(f.ctx, tx, f.ib, in)
		require.NoError(t, err)
		require.True(t, res.Applied)
		return errForced
	})
	require.ErrorIs(t, err, errForced)
	require.Equal(t, stepRow{Status: StatusPending}, f.row(t))
	require.False(t, f.recorded(t, StepPaid, f.created))

	require.NoError(t, pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
		_, err := ApplyStepTx(f.ctx, tx, f.ib, in)
		return err
	}))
	require.Equal(t, stepRow{Status: StatusPaid, PaymentIntentID: ptr("pi_1")}, f.row(t))
	require.True(t, f.recorded(t, StepPaid, f.created))
}

func ptr[T any](v T) *T { return &v }
