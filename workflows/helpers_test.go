package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
)

// acts is the typed nil pointer the tests mock activities through, exactly
// as the workflows call them.
var acts = (*activities.Activities)(nil)

const (
	testOrderID       = "0b6f3f3e-7d6c-4a39-9d7e-8a1d2d9f0001"
	testCreatedEvent  = "11111111-1111-4111-8111-111111111111"
	testCancelEvent   = "22222222-2222-4222-8222-222222222222"
	testEmail         = "ada@example.com"
	testAmount        = int64(2500)
	testPaymentIntent = "pi_test_1"
)

var testOccurredAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func createdInput(t *testing.T, paymentMethod string) handoff.EventInput {
	t.Helper()
	payload, err := json.Marshal(orders.OrderCreated{
		OrderID: testOrderID, CustomerEmail: testEmail, Currency: "usd",
		PaymentMethod: paymentMethod, Amount: testAmount,
		Items: []orders.Item{{SKU: "SKU-1", Quantity: 2, UnitAmount: 1250}},
	})
	require.NoError(t, err)
	return handoff.EventInput{
		EventID: testCreatedEvent, EventType: orders.EventOrderCreated, AggregateType: orders.AggregateType,
		AggregateID: testOrderID, Sequence: 1, SchemaVersion: orders.OrderCreatedVersion,
		OccurredAt: testOccurredAt, Payload: payload,
	}
}

func cancelledInput(t *testing.T) handoff.EventInput {
	t.Helper()
	payload, err := json.Marshal(orders.OrderCancelled{OrderID: testOrderID, CreatedEventID: testCreatedEvent, Reason: "changed my mind"})
	require.NoError(t, err)
	return handoff.EventInput{
		EventID: testCancelEvent, EventType: orders.EventOrderCancelled, AggregateType: orders.AggregateType,
		AggregateID: testOrderID, Sequence: 2, SchemaVersion: orders.OrderCancelledVersion,
		OccurredAt: testOccurredAt.Add(time.Minute), Payload: payload,
	}
}

// effects records, in order, every activity call a workflow made, as short
// strings ("charge", "project:paid", "email:confirmation", ...), so a test
// states the whole sequence of side effects it expects.
type effects struct {
	mu    sync.Mutex
	calls []string
}

func (e *effects) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, fmt.Sprintf(format, args...))
}

func (e *effects) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.calls...)
}

// fakes are the activity behaviours of one test; a nil func fails the test
// if the workflow calls that activity.
type fakes struct {
	charge    func(n int, in activities.ChargeInput) (activities.ChargeResult, error)
	reconcile func(in activities.ReconcileInput) (activities.ReconcileResult, error)
	refund    func(in activities.RefundInput) (activities.RefundResult, error)
	await     func(in activities.AwaitSagaInput) (activities.AwaitSagaResult, error)
	// orderState is the order as our database holds it; nil: pending,
	// no cancel requested.
	orderState func() (activities.OrderStateResult, error)
	// project, when set, answers ProjectOrder instead of "applied".
	project func(in activities.ProjectOrderInput) (activities.ProjectOrderResult, error)
	// chargeDelay makes the charge take that long (workflow time), so a
	// signal can arrive while it is in flight.
	chargeDelay time.Duration
	awaitDelay  time.Duration
	// inventory, when set, is the worker's inventory configuration
	// (InventorySettings); nil: no inventory, the stock step is skipped.
	inventory *activities.InventorySettings
	// reserve and release answer ReserveStock and ReleaseStock.
	reserve      func(in activities.ReserveStockInput) (activities.InventoryOutcome, error)
	release      func(n int, in activities.ReleaseStockInput) (activities.InventoryOutcome, error)
	reserveDelay time.Duration
	// cancelPayment answers CancelPayment.
	cancelPayment func(in activities.CancelPaymentInput) (activities.CancelPaymentResult, error)
	// incident, when set, answers RecordPaymentIncident instead of "first".
	incident func(in activities.PaymentIncidentInput) (activities.PaymentIncidentResult, error)
}

type harness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
	fx  *effects
	// metrics captures counters the workflow emits.
	metrics *counterHandler
	charges []activities.ChargeInput
	emails  []activities.SendEmailInput
	// stateReads counts GetOrderState calls (not in fx: existing effect
	// lists stay about effects).
	stateReads int
	reconciles []activities.ReconcileInput
	reserves   []activities.ReserveStockInput
	releases   []activities.ReleaseStockInput
	cancels    []activities.CancelPaymentInput
	incidents  []activities.PaymentIncidentInput
}

func newHarness(t *testing.T, f fakes) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	h := &harness{t: t, fx: &effects{}, metrics: &counterHandler{counts: map[string]int64{}}}
	suite.SetMetricsHandler(h.metrics)
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	env := suite.NewTestWorkflowEnvironment()
	// Runs start a second after their event committed, as in production;
	// a start a day later is the replay case (TestSagaLateRunReconcilesFirst).
	env.SetStartTime(testOccurredAt.Add(time.Second))
	h.env = env
	var mu sync.Mutex

	fail := func(name string) error {
		t.Errorf("unexpected activity %s", name)
		return fmt.Errorf("unexpected activity %s", name)
	}
	chargeCall := env.OnActivity(acts.ChargePayment, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ChargeInput) (activities.ChargeResult, error) {
			mu.Lock()
			h.charges = append(h.charges, in)
			n := len(h.charges)
			mu.Unlock()
			h.fx.add("charge")
			if f.charge == nil {
				return activities.ChargeResult{}, fail("ChargePayment")
			}
			return f.charge(n, in)
		}).Maybe()
	if f.chargeDelay > 0 {
		chargeCall.After(f.chargeDelay)
	}
	env.OnActivity(acts.ReconcilePayment, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReconcileInput) (activities.ReconcileResult, error) {
			h.fx.add("reconcile")
			mu.Lock()
			h.reconciles = append(h.reconciles, in)
			mu.Unlock()
			if f.reconcile == nil {
				return activities.ReconcileResult{}, fail("ReconcilePayment")
			}
			return f.reconcile(in)
		}).Maybe()
	env.OnActivity(acts.RefundPayment, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.RefundInput) (activities.RefundResult, error) {
			h.fx.add("refund:%s:%d", in.PaymentIntentID, in.Amount)
			if f.refund == nil {
				return activities.RefundResult{}, fail("RefundPayment")
			}
			return f.refund(in)
		}).Maybe()
	env.OnActivity(acts.SendEmail, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.SendEmailInput) (activities.SendEmailResult, error) {
			h.fx.add("email:%s", in.Kind)
			require.Equal(t, testEmail, in.To)
			mu.Lock()
			h.emails = append(h.emails, in)
			mu.Unlock()
			return activities.SendEmailResult{EmailID: "em_" + string(in.Kind)}, nil
		}).Maybe()
	env.OnActivity(acts.ProjectOrder, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ProjectOrderInput) (activities.ProjectOrderResult, error) {
			h.fx.add("project:%s", in.Step)
			if f.project != nil {
				return f.project(in)
			}
			return activities.ProjectOrderResult{Applied: true, Status: string(in.Step), CustomerEmail: testEmail}, nil
		}).Maybe()
	env.OnActivity(acts.GetOrderState, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.OrderStateInput) (activities.OrderStateResult, error) {
			require.Equal(t, testOrderID, in.OrderID)
			mu.Lock()
			h.stateReads++
			mu.Unlock()
			if f.orderState == nil {
				return activities.OrderStateResult{Status: "pending"}, nil
			}
			return f.orderState()
		}).Maybe()
	awaitCall := env.OnActivity(acts.AwaitSaga, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.AwaitSagaInput) (activities.AwaitSagaResult, error) {
			h.fx.add("await")
			if f.await == nil {
				return activities.AwaitSagaResult{}, fail("AwaitSaga")
			}
			return f.await(in)
		}).Maybe()
	if f.awaitDelay > 0 {
		awaitCall.After(f.awaitDelay)
	}
	if f.inventory != nil {
		env.OnActivity(acts.InventorySettings, mock.Anything).Return(*f.inventory, nil)
	}
	reserveCall := env.OnActivity(acts.ReserveStock, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReserveStockInput) (activities.InventoryOutcome, error) {
			h.fx.add("reserve")
			mu.Lock()
			h.reserves = append(h.reserves, in)
			mu.Unlock()
			if f.reserve == nil {
				return activities.InventoryOutcome{}, fail("ReserveStock")
			}
			return f.reserve(in)
		}).Maybe()
	if f.reserveDelay > 0 {
		reserveCall.After(f.reserveDelay)
	}
	env.OnActivity(acts.ReleaseStock, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.ReleaseStockInput) (activities.InventoryOutcome, error) {
			mu.Lock()
			h.releases = append(h.releases, in)
			n := len(h.releases)
			mu.Unlock()
			h.fx.add("release")
			if f.release == nil {
				return activities.InventoryOutcome{}, fail("ReleaseStock")
			}
			return f.release(n, in)
		}).Maybe()
	env.OnActivity(acts.CancelPayment, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.CancelPaymentInput) (activities.CancelPaymentResult, error) {
			mu.Lock()
			h.cancels = append(h.cancels, in)
			mu.Unlock()
			h.fx.add("cancel-payment")
			if f.cancelPayment == nil {
				return activities.CancelPaymentResult{}, fail("CancelPayment")
			}
			return f.cancelPayment(in)
		}).Maybe()
	env.OnActivity(acts.RecordPaymentIncident, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.PaymentIncidentInput) (activities.PaymentIncidentResult, error) {
			mu.Lock()
			h.incidents = append(h.incidents, in)
			mu.Unlock()
			h.fx.add("incident:%s", in.Kind)
			if f.incident != nil {
				return f.incident(in)
			}
			return activities.PaymentIncidentResult{First: true, Status: "confirmed"}, nil
		}).Maybe()
	return h
}

// signalCancelAt delivers the cancel signal after d of workflow time.
func (h *harness) signalCancelAt(d time.Duration) {
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(handoff.SignalCancel, handoff.CancelRequest{CancelEventID: testCancelEvent})
	}, d)
}

func (h *harness) sagaStatus() SagaStatus {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(handoff.QueryStatus)
	require.NoError(h.t, err)
	var st SagaStatus
	require.NoError(h.t, v.Get(&st))
	return st
}

// counterHandler is a client.MetricsHandler that keeps counter totals.
type counterHandler struct {
	mu     sync.Mutex
	counts map[string]int64
}

func (c *counterHandler) WithTags(map[string]string) client.MetricsHandler { return c }
func (c *counterHandler) Counter(name string) client.MetricsCounter {
	return counterFunc(func(d int64) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.counts[name] += d
	})
}
func (c *counterHandler) Gauge(string) client.MetricsGauge { return gaugeFunc(func(float64) {}) }
func (c *counterHandler) Timer(string) client.MetricsTimer { return timerFunc(func(time.Duration) {}) }

func (c *counterHandler) count(name string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[name]
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }

// Errors as the activities return them.
func temporalAppError(msg, typ string, nonRetryable bool) error {
	if nonRetryable {
		return temporal.NewNonRetryableApplicationError(msg, typ, nil)
	}
	return temporal.NewApplicationError(msg, typ)
}

func unknownOutcome() error {
	return temporalAppError("connection reset by peer", activities.ErrTypePaymentOutcomeUnknown, false)
}

func declinedErr() error {
	return temporalAppError("card declined", activities.ErrTypePaymentDeclined, true)
}

// testWriter sends the workflow logs (warnings and errors only) to the test
// log, shown when a test fails.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// mustMetrics is the activities' metrics on a registry of the test's own.
func mustMetrics(t *testing.T) *activities.Metrics {
	t.Helper()
	m, err := activities.NewMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	return m
}
