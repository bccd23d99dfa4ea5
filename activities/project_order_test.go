package activities

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/failpoints"
	"github.com/outflow/outflow/internal/testdb"
)

// projectionFixture is a migrated database holding one pending order.
type projectionFixture struct {
	acts    *Activities
	pool    *pgxpool.Pool
	orderID string
	created string // the OrderCreated event id (sequence 1)
}

func setupProjection(t *testing.T) *projectionFixture {
	t.Helper()
	pool, _ := testdb.New(t)
	fps, err := failpoints.Parse("")
	require.NoError(t, err)
	f := &projectionFixture{
		acts:    &Activities{DB: pool, Metrics: NewMetrics(prometheus.NewRegistry()), Failpoints: fps},
		pool:    pool,
		orderID: uuid.NewString(),
		created: uuid.NewString(),
	}
	// Test fixture: the row the order service writes with its OrderCreated event.
	_, err = pool.Exec(context.Background(), `
		INSERT INTO orders (id, customer_email, currency, payment_method, amount, items, created_event_id)
		VALUES ($1, 'ada@example.com', 'usd', 'pm_card_visa', 2500, '[]', $2)`, f.orderID, f.created)
	require.NoError(t, err)
	return f
}

func (f *projectionFixture) project(t *testing.T, eventID string, seq int64, step OrderStep) (ProjectOrderResult, error) {
	t.Helper()
	return f.acts.ProjectOrder(ctxT(t), ProjectOrderInput{EventID: eventID, OrderID: f.orderID, Step: step, Sequence: seq,
		PaymentIntentID: "pi_1", RefundID: map[bool]string{true: "re_1"}[step == StepCancelled]})
}

type orderRow struct {
	Status          string
	AppliedSequence int64
	PaymentIntentID *string
	RefundID        *string
}

func (f *projectionFixture) row(t *testing.T) orderRow {
	t.Helper()
	var r orderRow
	require.NoError(t, f.pool.QueryRow(context.Background(),
		`SELECT status, applied_sequence, payment_intent_id, refund_id FROM orders WHERE id = $1`, f.orderID).
		Scan(&r.Status, &r.AppliedSequence, &r.PaymentIntentID, &r.RefundID))
	return r
}

// A redelivered step finds its inbox row: acknowledged without effect, and
// counted in inbox_duplicates_total{consumer}.
func TestProjectionDuplicateIsNoOpAndCounted(t *testing.T) {
	t.Parallel()
	f := setupProjection(t)

	res, err := f.project(t, f.created, 1, StepPaid)
	require.NoError(t, err)
	require.True(t, res.Applied)
	require.Equal(t, "ada@example.com", res.CustomerEmail)

	dup, err := f.project(t, f.created, 1, StepPaid)
	require.NoError(t, err)
	require.True(t, dup.Duplicate)
	require.False(t, dup.Applied)
	require.Equal(t, "paid", dup.Status)

	require.Equal(t, 1.0, testutil.ToFloat64(f.acts.Metrics.InboxDuplicates.WithLabelValues(ConsumerName(StepPaid))))
	r := f.row(t)
	require.Equal(t, "paid", r.Status)
	require.EqualValues(t, 0, r.AppliedSequence, "paid is not the event's final step")
	require.Equal(t, "pi_1", *r.PaymentIntentID)
}

// The cancel (sequence 2) arriving before the order's first event finished
// is a retryable gap: nothing is written, not even its inbox row, and it
// applies once the earlier event's final step has.
func TestProjectionGapIsRetriedNotSkipped(t *testing.T) {
	t.Parallel()
	f := setupProjection(t)
	cancelEvent := uuid.NewString()

	_, err := f.project(t, cancelEvent, 2, StepCancelled)
	requireAppError(t, err, ErrTypeSequenceGap, false)
	require.Equal(t, orderRow{Status: "pending"}, f.row(t))

	_, err = f.project(t, f.created, 1, StepPaid)
	require.NoError(t, err)
	_, err = f.project(t, cancelEvent, 2, StepCancelled)
	requireAppError(t, err, ErrTypeSequenceGap, false) // paid is not final

	_, err = f.project(t, f.created, 1, StepConfirmed)
	require.NoError(t, err)
	require.EqualValues(t, 1, f.row(t).AppliedSequence)

	res, err := f.project(t, cancelEvent, 2, StepCancelled)
	require.NoError(t, err)
	require.True(t, res.Applied)
	r := f.row(t)
	require.Equal(t, "cancelled", r.Status)
	require.EqualValues(t, 2, r.AppliedSequence)
	require.Equal(t, "re_1", *r.RefundID)
}

// Illegal transitions are final errors: confirmed needs paid, and nothing
// leaves cancelled.
func TestProjectionIllegalTransitions(t *testing.T) {
	t.Parallel()
	f := setupProjection(t)

	_, err := f.project(t, f.created, 1, StepConfirmed)
	requireAppError(t, err, ErrTypeIllegalTransition, true)

	_, err = f.project(t, f.created, 1, StepSagaStopped)
	require.NoError(t, err)
	_, err = f.project(t, uuid.NewString(), 2, StepCancelled)
	require.NoError(t, err)
	_, err = f.project(t, uuid.NewString(), 3, StepPaid)
	requireAppError(t, err, ErrTypeIllegalTransition, true)
	require.Equal(t, "cancelled", f.row(t).Status)
}

// A step of an event whose place in the sequence is already closed (the
// cancel workflow closing a saga that got further than it knew) is
// acknowledged without effect.
func TestProjectionStaleStepIsAcknowledged(t *testing.T) {
	t.Parallel()
	f := setupProjection(t)
	_, err := f.project(t, f.created, 1, StepPaymentFailed)
	require.NoError(t, err)

	res, err := f.project(t, f.created, 1, StepSagaStopped)
	require.NoError(t, err)
	require.True(t, res.Stale)
	require.Equal(t, "payment_failed", f.row(t).Status)
}

// consumer.after_commit=error fails the activity after the commit; the retry
// finds the inbox row and does not apply the change twice.
func TestProjectionFailpointAfterCommit(t *testing.T) {
	t.Parallel()
	f := setupProjection(t)
	fps, err := failpoints.Parse(failpoints.ConsumerAfterCommit + "=error")
	require.NoError(t, err)
	f.acts.Failpoints = fps

	_, err = f.project(t, f.created, 1, StepPaid)
	require.ErrorIs(t, err, failpoints.ErrInjected)
	require.Equal(t, "paid", f.row(t).Status)

	f.acts.Failpoints, _ = failpoints.Parse("")
	res, err := f.project(t, f.created, 1, StepPaid)
	require.NoError(t, err)
	require.True(t, res.Duplicate)
}
