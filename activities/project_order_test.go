package activities

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	// The order app's tables in testdb's template (it migrates the sets
	// the binary registers).
	_ "github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testlog"
)

// projectionFixture is a migrated database holding one pending order.
type projectionFixture struct {
	acts    *Activities
	pool    *pgxpool.Pool
	reg     *prometheus.Registry // the inbox's metric
	orderID string
	created string // the OrderCreated event id (sequence 1)
}

func setupProjection(t *testing.T) *projectionFixture {
	t.Helper()
	pool, _ := testdb.New(t)
	fps, err := failpoints.Parse("")
	require.NoError(t, err)
	f := &projectionFixture{
		acts:    &Activities{DB: pool, Metrics: mustMetrics(t), Failpoints: fps},
		pool:    pool,
		orderID: uuid.NewString(),
		created: uuid.NewString(),
	}
	f.reg = withInbox(t, f.acts)
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

	require.Equal(t, 1.0, inboxDuplicates(t, f.reg, ConsumerName(StepPaid)))
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

// A replayed payment run charging a cancelled order: its StepPaid is at a
// sequence the cancel already closed, but leaving cancelled is never legal,
// so it must fail loudly (a non-retryable IllegalTransition, an error log
// line, outflow_illegal_transitions_total{step}) instead of being
// acknowledged as stale. It is run through Temporal's activity environment
// so the activity's own logger can be read.
func TestProjectionIllegalStaleStepIsReported(t *testing.T) {
	t.Parallel()
	f := setupProjection(t)
	_, err := f.project(t, f.created, 1, StepSagaStopped)
	require.NoError(t, err)
	_, err = f.project(t, uuid.NewString(), 2, StepCancelled)
	require.NoError(t, err)

	var logs testlog.SyncBuffer
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts.ProjectOrder)
	_, err = env.ExecuteActivity(f.acts.ProjectOrder, ProjectOrderInput{EventID: f.created, OrderID: f.orderID,
		Step: StepPaid, Sequence: 1, PaymentIntentID: "pi_replayed"})
	requireAppError(t, err, ErrTypeIllegalTransition, true)
	require.Equal(t, 1.0, testutil.ToFloat64(f.acts.Metrics.IllegalTransitions.WithLabelValues(string(StepPaid))))

	line := logs.String()
	require.Contains(t, line, "level=ERROR")
	for _, kv := range []string{"order_id=" + f.orderID, "event_id=" + f.created, "step=paid", "status=cancelled"} {
		require.Contains(t, line, kv)
	}
	r := f.row(t)
	require.Equal(t, "cancelled", r.Status)
	require.EqualValues(t, 2, r.AppliedSequence)
	require.Equal(t, "pi_1", *r.PaymentIntentID, "the replayed run's PaymentIntent is not recorded")
	var inbox int
	require.NoError(t, f.pool.QueryRow(ctxT(t), `SELECT count(*) FROM processed_events WHERE consumer_name = $1`,
		ConsumerName(StepPaid)).Scan(&inbox))
	require.Zero(t, inbox, "the refused step leaves no inbox row: it fails again if redelivered")
}

// A late cancel closes the saga's event without knowing its sequence
// (Sequence 0), which the order row supplies (orders.TestApplyStepSequenceZero
// covers the rule); an event the row cannot place is a final SequenceUnknown.
func TestProjectionSequenceZeroResolvesFromOrderRow(t *testing.T) {
	t.Parallel()
	f := setupProjection(t)
	cancelEvent := uuid.NewString()
	_, err := f.pool.Exec(ctxT(t), `UPDATE orders SET cancel_event_id = $2, cancel_event_sequence = 2 WHERE id = $1`,
		f.orderID, cancelEvent)
	require.NoError(t, err)

	res, err := f.project(t, f.created, 0, StepSagaStopped)
	require.NoError(t, err)
	require.True(t, res.Applied)
	res, err = f.project(t, cancelEvent, 0, StepCancelled)
	require.NoError(t, err)
	require.True(t, res.Applied)
	require.Equal(t, orderRow{Status: "cancelled", AppliedSequence: 2, PaymentIntentID: ptr("pi_1"), RefundID: ptr("re_1")}, f.row(t))

	_, err = f.project(t, uuid.NewString(), 0, StepSagaStopped)
	requireAppError(t, err, ErrTypeSequenceUnknown, true)
	require.ErrorContains(t, err, "is neither the created nor the cancel event of order "+f.orderID)
}

// The errors of orders.ApplyStep become the application errors the
// workflows' retry policies act on; an unknown step is refused but, having
// met no status, is neither logged nor counted as an illegal transition.
func TestProjectionErrorTypes(t *testing.T) {
	t.Parallel()
	f := setupProjection(t)

	_, err := f.acts.ProjectOrder(ctxT(t), ProjectOrderInput{EventID: f.created, OrderID: uuid.NewString(), Step: StepPaid, Sequence: 1})
	requireAppError(t, err, ErrTypeOrderNotFound, true)

	_, err = f.project(t, f.created, 1, "shipped")
	requireAppError(t, err, ErrTypeIllegalTransition, true)
	require.ErrorContains(t, err, `unknown projection step "shipped"`)
	require.Zero(t, testutil.CollectAndCount(f.acts.Metrics.IllegalTransitions))

	// What PostgreSQL refused before the IDs were parsed: retried, like any
	// database error.
	for _, in := range []ProjectOrderInput{
		{EventID: f.created, OrderID: "not-a-uuid", Step: StepPaid, Sequence: 1},
		{EventID: "not-a-uuid", OrderID: f.orderID, Step: StepPaid, Sequence: 1},
	} {
		_, err = f.acts.ProjectOrder(ctxT(t), in)
		require.Error(t, err)
		var appErr *temporal.ApplicationError
		require.False(t, errors.As(err, &appErr) && appErr.NonRetryable(), "%v", err)
	}
	require.Equal(t, orderRow{Status: "pending"}, f.row(t))
}

// skipFixture is an order made by the order service whose stream has a hole
// to be: OrderCreated (1), an event no workflow takes (2), quarantined by
// the relay, and the cancel (3).
type skipFixture struct {
	*projectionFixture
	stray, cancel string
}

// setupOrderProjection is a projection fixture of an order the order
// service created (one item, 25.00 USD); created is what it answered.
func setupOrderProjection(t *testing.T) (f *projectionFixture, created orders.CreateOrderResult) {
	t.Helper()
	f = setupProjection(t)
	created, err := orders.CreateOrder(ctxT(t), f.pool, orders.CreateOrderParams{CustomerEmail: "ada@example.com", Currency: "usd",
		PaymentMethod: "pm_card_visa", Items: []orders.Item{{SKU: "SKU-1", Quantity: 1, UnitAmount: 2500}}})
	require.NoError(t, err)
	f.orderID, f.created = created.OrderID.String(), created.EventID.String()
	return f, created
}

func setupSkip(t *testing.T) *skipFixture {
	t.Helper()
	f, created := setupOrderProjection(t)
	ctx := ctxT(t)
	stray := testdb.Enqueue(t, f.pool, testdb.Event(t, f.orderID, "OrderAudited"))[0]
	cancel, err := orders.CancelOrder(ctx, f.pool, created.OrderID)
	require.NoError(t, err)
	require.EqualValues(t, 3, cancel.AggregateSequence)
	// What the relay leaves behind for an event no workflow takes.
	outboxtest.Force(t, f.pool, outboxtest.Match{ID: stray.ID}, outboxtest.SetQuarantined(0, "no workflow for OrderAudited"))
	return &skipFixture{projectionFixture: f, stray: stray.ID.String(), cancel: cancel.EventID.String()}
}

// skip is `outboxctl skip` of the stray event: the skip and the settling of
// the order's sequence in one transaction.
func (f *skipFixture) skip(t *testing.T) {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		c, err := outboxops.SkipTx(ctx, tx, uuid.MustParse(f.stray), "no workflow takes it", "test")
		if err != nil {
			return err
		}
		return orders.SettleSkippedTx(ctx, tx, c.Before.AggregateType, c.Before.AggregateID, c.Before.Sequence)
	}))
}

// A skipped event leaves no hole: whether the skip comes before or after the
// earlier event applied, the cancel behind it applies.
func TestProjectionSkippedSequenceIsSettled(t *testing.T) {
	t.Parallel()
	t.Run("skip after the earlier event applied", func(t *testing.T) {
		t.Parallel()
		f := setupSkip(t)
		_, err := f.project(t, f.created, 1, StepPaymentFailed)
		require.NoError(t, err)
		f.skip(t)
		require.EqualValues(t, 2, f.row(t).AppliedSequence, "the skip itself closes sequence 2")

		res, err := f.project(t, f.cancel, 3, StepCancelled)
		require.NoError(t, err)
		require.True(t, res.Applied)
		require.EqualValues(t, 3, f.row(t).AppliedSequence)
	})
	t.Run("skip before the earlier event applied", func(t *testing.T) {
		t.Parallel()
		f := setupSkip(t)
		f.skip(t)
		require.EqualValues(t, 0, f.row(t).AppliedSequence, "sequence 1 is still open")
		_, err := f.project(t, f.cancel, 3, StepCancelled)
		requireAppError(t, err, ErrTypeSequenceGap, false)

		_, err = f.project(t, f.created, 1, StepSagaStopped)
		require.NoError(t, err)
		require.EqualValues(t, 2, f.row(t).AppliedSequence, "the final step of 1 also closes the skipped 2")
		res, err := f.project(t, f.cancel, 3, StepCancelled)
		require.NoError(t, err)
		require.True(t, res.Applied)
		require.Equal(t, orderRow{Status: "cancelled", AppliedSequence: 3, PaymentIntentID: ptr("pi_1"), RefundID: ptr("re_1")}, f.row(t))
	})
}

func ptr[T any](v T) *T { return &v }
