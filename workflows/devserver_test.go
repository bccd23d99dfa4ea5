package workflows

import (
	"context"
	"encoding/json"
	sdkpb "go.temporal.io/api/sdk/v1"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	// The order app's tables in testdb's template (it migrates the sets
	// the binary registers).
	_ "github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/providersim"
)

// recordEnv, when set, makes TestSagaOnDevServer save the histories it
// produces under testdata/ for TestReplayHistories:
//
//	OUTFLOW_RECORD_HISTORIES=1 go test -run TestSagaOnDevServer ./workflows/
//
// A file that exists is kept: it is a run of older code, and replaying it
// is what proves a change safe for workflows still in flight. Only
// OUTFLOW_RECORD_HISTORIES=overwrite replaces them, for when no run of that
// older code can exist any more.
const recordEnv = "OUTFLOW_RECORD_HISTORIES"

// stack is a real Temporal dev server, a worker running the real workflows
// and activities, the provider simulator and a migrated database.
type stack struct {
	c    client.Client
	sim  *providersim.Simulator
	pool *pgxpool.Pool
	tq   string
}

func startStack(t *testing.T) *stack {
	t.Helper()
	srv := devserver.Start(t, devserver.Options{})
	return startStackOn(t, srv.Client(), "saga-test-"+uuid.NewString())
}

// startStackOn starts, for the Temporal client c, a migrated database, the
// provider simulator and a worker on task queue tq running the real
// workflows and activities.
func startStackOn(t *testing.T, c client.Client, tq string) *stack {
	t.Helper()
	pool, _ := testdb.New(t)
	sim := providersim.New(providersim.Options{})
	base, err := sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })

	acts, err := activities.New(activities.Config{StripeAPIBase: base, EmailAPIBase: base, HTTPTimeout: 2 * time.Second})
	require.NoError(t, err)
	acts.DB, acts.Temporal = pool, c
	// Short, so the 3-D Secure deadline passes within a test; long enough
	// for a test to authenticate well before it.
	acts.AuthenticationTimeout = devServerAuthTimeout
	acts.Metrics = mustMetrics(t)
	acts.Failpoints, err = failpoints.Parse("")
	require.NoError(t, err)

	s := &stack{c: c, sim: sim, pool: pool, tq: tq}
	w := worker.New(c, tq, worker.Options{})
	Register(w)
	w.RegisterActivity(acts)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return s
}

// order is one order's events, with a row in the database as the order
// service would have written it.
type order struct {
	id, created, cancelled string
}

func (s *stack) newOrder(t *testing.T) order {
	t.Helper()
	o := order{id: uuid.NewString(), created: uuid.NewString(), cancelled: uuid.NewString()}
	_, err := s.pool.Exec(context.Background(), `
		INSERT INTO orders (id, customer_email, currency, payment_method, amount, items, created_event_id)
		VALUES ($1, 'ada@example.com', 'usd', 'pm_card_visa', 2500, '[]', $2)`, o.id, o.created)
	require.NoError(t, err)
	return o
}

func (o order) createdInput(t *testing.T, method string) handoff.EventInput {
	payload, err := json.Marshal(orders.OrderCreated{OrderID: o.id, CustomerEmail: "ada@example.com", Currency: "usd",
		PaymentMethod: method, Amount: 2500, Items: []orders.Item{{SKU: "SKU-1", Quantity: 2, UnitAmount: 1250}}})
	require.NoError(t, err)
	return handoff.EventInput{EventID: o.created, EventType: orders.EventOrderCreated, AggregateType: orders.AggregateType,
		AggregateID: o.id, Sequence: 1, SchemaVersion: 1, OccurredAt: time.Now().UTC(), Payload: payload}
}

func (o order) cancelledInput(t *testing.T) handoff.EventInput {
	payload, err := json.Marshal(orders.OrderCancelled{OrderID: o.id, CreatedEventID: o.created})
	require.NoError(t, err)
	return handoff.EventInput{EventID: o.cancelled, EventType: orders.EventOrderCancelled, AggregateType: orders.AggregateType,
		AggregateID: o.id, Sequence: 2, SchemaVersion: 1, OccurredAt: time.Now().UTC(), Payload: payload}
}

// startOpts are the relay's start options: ID = event id, duplicates rejected.
func (s *stack) startOpts(id string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{ID: id, TaskQueue: s.tq,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE}
}

func (s *stack) start(t *testing.T, name string, in handoff.EventInput) client.WorkflowRun {
	t.Helper()
	run, err := s.c.ExecuteWorkflow(ctxFor(t), s.startOpts(in.EventID), name, in)
	require.NoError(t, err)
	return run
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func (s *stack) status(t *testing.T, orderID string) (status string, applied int64, refund *string) {
	t.Helper()
	require.NoError(t, s.pool.QueryRow(context.Background(),
		`SELECT status, applied_sequence, refund_id FROM orders WHERE id = $1`, orderID).Scan(&status, &applied, &refund))
	return
}

// effectsOf lists the simulator's effects for one order: PaymentIntents,
// refunds of them, and email kinds.
func (s *stack) effectsOf(orderID string) (pis []providersim.LedgerPaymentIntent, refunds []providersim.LedgerRefund, kinds []string) {
	l := s.sim.Ledger()
	mine := map[string]bool{}
	for _, pi := range l.PaymentIntents {
		if pi.Metadata[activities.MetadataOrderID] == orderID {
			pis = append(pis, pi)
			mine[pi.ID] = true
		}
	}
	for _, r := range l.Refunds {
		if mine[r.PaymentIntent] {
			refunds = append(refunds, r)
		}
	}
	for _, e := range l.Emails {
		if e.Tags[activities.TagOrderID] == orderID {
			kinds = append(kinds, e.Tags[activities.TagKind])
		}
	}
	return
}

// devServerAuthTimeout is the dev-server worker's 3-D Secure deadline.
const devServerAuthTimeout = 15 * time.Second

// awaitStage waits until the order's one PaymentIntent has piStatus and its
// saga reports stage, and returns the PaymentIntent.
func (s *stack) awaitStage(t *testing.T, o order, piStatus string, stage Stage) providersim.LedgerPaymentIntent {
	t.Helper()
	var pi providersim.LedgerPaymentIntent
	require.Eventually(t, func() bool {
		pis, _, _ := s.effectsOf(o.id)
		if len(pis) == 1 {
			pi = pis[0]
		}
		return len(pis) == 1
	}, 30*time.Second, 50*time.Millisecond, "the charge reaches the provider")
	require.Equal(t, piStatus, pi.Status)
	require.Eventually(t, func() bool {
		v, err := s.c.QueryWorkflow(ctxFor(t), o.created, "", handoff.QueryStatus)
		var st SagaStatus
		return err == nil && v.Get(&st) == nil && st.Stage == stage
	}, 30*time.Second, 50*time.Millisecond, "the saga reaches %s", stage)
	return pi
}

// signalWebhook delivers a Stripe webhook about the PaymentIntent pi to the
// order's saga, as the relay does, and returns the event it signalled.
func (s *stack) signalWebhook(t *testing.T, o order, pi, typ, status string) handoff.EventInput {
	t.Helper()
	payload, err := json.Marshal(orders.PaymentWebhookReceived{StripeEventID: "evt_" + typ + "_" + o.id[:8], Type: typ,
		Created: time.Now().Unix(), OrderID: o.id, SagaWorkflowID: o.created, ObjectID: pi, ObjectType: "payment_intent",
		PaymentIntentID: pi, Status: status, Amount: 2500, Currency: "usd"})
	require.NoError(t, err)
	ev := handoff.EventInput{EventID: uuid.NewString(), EventType: orders.EventPaymentWebhookReceived, AggregateType: orders.AggregatePayment,
		AggregateID: o.id, Sequence: 1, SchemaVersion: orders.PaymentWebhookReceivedVersion, OccurredAt: time.Now().UTC(), Payload: payload}
	require.NoError(t, s.c.SignalWorkflow(ctxFor(t), o.created, "", handoff.SignalPaymentWebhook, ev))
	return ev
}

// record saves a workflow's history under testdata/ when recordEnv is set.
func (s *stack) record(t *testing.T, workflowID, file string) {
	t.Helper()
	mode := os.Getenv(recordEnv)
	if mode == "" {
		return
	}
	path := filepath.Join("testdata", file)
	if _, err := os.Stat(path); err == nil && mode != "overwrite" {
		t.Logf("keeping %s, recorded by older code (%s=overwrite replaces it)", path, recordEnv)
		return
	}
	it := s.c.GetWorkflowHistory(ctxFor(t), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// The saga and the cancel on a real dev server with the real activities,
// the provider simulator and PostgreSQL: every order reaches its final state
// with the expected effects, once each.
func TestSagaOnDevServer(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	s := startStack(t)

	t.Run("confirmed", func(t *testing.T) {
		t.Parallel()
		o := s.newOrder(t)
		var res handoff.SagaResult
		require.NoError(t, s.start(t, handoff.OrderCreatedWorkflowName, o.createdInput(t, "pm_card_visa")).Get(ctxFor(t), &res))

		require.Equal(t, handoff.SagaConfirmed, res.Outcome)
		st, applied, _ := s.status(t, o.id)
		require.Equal(t, "confirmed", st)
		require.EqualValues(t, 1, applied)
		pis, refunds, kinds := s.effectsOf(o.id)
		require.Len(t, pis, 1)
		require.Empty(t, refunds)
		require.Equal(t, []string{"confirmation"}, kinds)
		// The run's current details, beside the start's summary in the
		// Temporal UI: the stage and the charge, no personal data.
		md, err := s.c.QueryWorkflow(ctxFor(t), o.created, "", "__temporal_workflow_metadata")
		require.NoError(t, err)
		var meta sdkpb.WorkflowMetadata
		require.NoError(t, md.Get(&meta))
		require.Equal(t, "**Stage** confirmed  \n**Charged** "+pis[0].ID, meta.GetCurrentDetails())
		s.record(t, o.created, "order_created_confirmed.json")
		s.record(t, o.created, "order_created_confirmed_time_edges.json")
	})

	// An OrderCreated v2 (with a shipping address) takes the versioned path
	// of ChangeShippingAddress: its history has the version marker and the
	// memo, which TestReplayHistories then replays.
	t.Run("confirmed_v2", func(t *testing.T) {
		t.Parallel()
		o := s.newOrder(t)
		in := o.createdInput(t, "pm_card_visa")
		in.SchemaVersion, in.Payload = orders.OrderCreatedV2, v2Payload(t, in.Payload)
		var res handoff.SagaResult
		require.NoError(t, s.start(t, handoff.OrderCreatedWorkflowName, in).Get(ctxFor(t), &res))

		require.Equal(t, handoff.SagaConfirmed, res.Outcome)
		st, _, _ := s.status(t, o.id)
		require.Equal(t, "confirmed", st)
		_, _, kinds := s.effectsOf(o.id)
		require.Equal(t, []string{"confirmation"}, kinds)
		desc, err := s.c.DescribeWorkflow(ctxFor(t), o.created, "")
		require.NoError(t, err)
		var shipsTo string
		require.NoError(t, converter.GetDefaultDataConverter().FromPayload(desc.Memo.GetFields()[MemoShipsTo], &shipsTo))
		require.Equal(t, "GB", shipsTo)
		s.record(t, o.created, "order_created_v2_confirmed.json")
	})

	// A charge the provider leaves processing, settled later: the saga
	// waits for the PaymentIntent's webhook (ChangePaymentWebhooks) and
	// confirms on it, without reconciling.
	t.Run("processing_webhook", func(t *testing.T) {
		t.Parallel()
		o := s.newOrder(t)
		run := s.start(t, handoff.OrderCreatedWorkflowName, o.createdInput(t, "pm_sim_processing"))
		pi := s.awaitStage(t, o, "processing", StageAwaitingWebhook)
		require.NoError(t, s.sim.Settle(pi.ID, providersim.OutcomeSucceeded))
		ev := s.signalWebhook(t, o, pi.ID, "payment_intent.succeeded", "succeeded")
		require.NoError(t, s.c.SignalWorkflow(ctxFor(t), o.created, "", handoff.SignalPaymentWebhook, ev), "a re-delivery is dropped")

		var res handoff.SagaResult
		require.NoError(t, run.Get(ctxFor(t), &res))
		require.Equal(t, handoff.SagaConfirmed, res.Outcome)
		require.Equal(t, pi.ID, res.PaymentIntentID)
		st, _, _ := s.status(t, o.id)
		require.Equal(t, "confirmed", st)
		pis, refunds, kinds := s.effectsOf(o.id)
		require.Len(t, pis, 1)
		require.Equal(t, "succeeded", pis[0].Status)
		require.Empty(t, refunds)
		require.Equal(t, []string{"confirmation"}, kinds)
		s.record(t, o.created, "order_created_processing_webhook.json")
	})

	// A 3-D Secure charge the customer completes: the saga waits for the
	// webhook (ChangeThreeDSecure) and confirms on it.
	t.Run("three_d_secure_completed", func(t *testing.T) {
		t.Parallel()
		o := s.newOrder(t)
		run := s.start(t, handoff.OrderCreatedWorkflowName, o.createdInput(t, "pm_card_authenticationRequired"))
		pi := s.awaitStage(t, o, "requires_action", StageAwaitingAuthentication)
		require.NoError(t, s.sim.Authenticate(pi.ID, providersim.OutcomeSucceeded))
		s.signalWebhook(t, o, pi.ID, "payment_intent.succeeded", "succeeded")

		var res handoff.SagaResult
		require.NoError(t, run.Get(ctxFor(t), &res))
		require.Equal(t, handoff.SagaConfirmed, res.Outcome)
		require.Equal(t, pi.ID, res.PaymentIntentID)
		pis, _, kinds := s.effectsOf(o.id)
		require.Len(t, pis, 1)
		require.Equal(t, "succeeded", pis[0].Status)
		require.Equal(t, []string{"confirmation"}, kinds)
		s.record(t, o.created, "order_created_three_d_secure_completed.json")
	})

	// Nobody authenticates: at the deadline the saga cancels the
	// PaymentIntent at the provider and fails the order without a charge.
	t.Run("three_d_secure_deadline", func(t *testing.T) {
		t.Parallel()
		o := s.newOrder(t)
		run := s.start(t, handoff.OrderCreatedWorkflowName, o.createdInput(t, "pm_card_authenticationRequired"))
		var res handoff.SagaResult
		ctx, cancel := context.WithTimeout(context.Background(), devServerAuthTimeout+time.Minute)
		defer cancel()
		require.NoError(t, run.Get(ctx, &res))

		require.Equal(t, handoff.SagaPaymentFailed, res.Outcome)
		require.Equal(t, ReasonAuthenticationNotCompleted, res.Reason)
		require.False(t, res.Charged)
		st, _, _ := s.status(t, o.id)
		require.Equal(t, "payment_failed", st)
		pis, _, kinds := s.effectsOf(o.id)
		require.Len(t, pis, 1)
		require.Equal(t, "canceled", pis[0].Status)
		require.Equal(t, []string{"payment_failed"}, kinds)
		require.Error(t, s.sim.Authenticate(pis[0].ID, providersim.OutcomeSucceeded), "too late for the customer")
		s.record(t, o.created, "order_created_three_d_secure_deadline.json")
	})

	t.Run("declined", func(t *testing.T) {
		t.Parallel()
		o := s.newOrder(t)
		var res handoff.SagaResult
		require.NoError(t, s.start(t, handoff.OrderCreatedWorkflowName, o.createdInput(t, "pm_card_chargeDeclined")).Get(ctxFor(t), &res))

		require.Equal(t, handoff.SagaPaymentFailed, res.Outcome)
		st, _, _ := s.status(t, o.id)
		require.Equal(t, "payment_failed", st)
		_, _, kinds := s.effectsOf(o.id)
		require.Equal(t, []string{"payment_failed"}, kinds)
		s.record(t, o.created, "order_created_declined.json")
	})

	// The cancel races the charge: it arrives while the provider is slow to
	// answer. The saga records the charge and stops before confirming; the
	// cancel refunds it once.
	t.Run("cancel_racing_the_charge", func(t *testing.T) {
		o := s.newOrder(t) // not parallel: the fault is global to the simulator
		require.NoError(t, s.sim.InjectFault(providersim.Fault{Operation: providersim.OperationPaymentIntentsCreate, Fault: "latency:1500ms"}))
		saga := s.start(t, handoff.OrderCreatedWorkflowName, o.createdInput(t, "pm_card_visa"))
		// The saga asks the order first (ChangeTimeEdges); the cancel must
		// arrive while the slow charge is in flight, not before it starts.
		require.Eventually(t, func() bool {
			v, err := s.c.QueryWorkflow(ctxFor(t), o.created, "", handoff.QueryStatus)
			var st SagaStatus
			return err == nil && v.Get(&st) == nil && st.Stage == StageCharging
		}, 30*time.Second, 20*time.Millisecond, "the saga is charging")
		var cres CancelResult
		require.NoError(t, s.start(t, handoff.OrderCancelledWorkflowName, o.cancelledInput(t)).Get(ctxFor(t), &cres))
		var sres handoff.SagaResult
		require.NoError(t, saga.Get(ctxFor(t), &sres))

		require.Equal(t, handoff.SagaStopped, sres.Outcome)
		require.True(t, cres.Charged)
		require.True(t, cres.Refunded)
		st, applied, refund := s.status(t, o.id)
		require.Equal(t, "cancelled", st)
		require.EqualValues(t, 2, applied)
		require.NotNil(t, refund)
		pis, refunds, kinds := s.effectsOf(o.id)
		require.Len(t, pis, 1)
		require.Len(t, refunds, 1)
		require.Equal(t, pis[0].Amount, refunds[0].Amount, "net charge zero")
		require.Equal(t, []string{"cancellation"}, kinds)
		s.record(t, o.created, "order_created_cancelled_during_charge.json")
		s.record(t, o.cancelled, "order_cancelled_refunded.json")
		s.record(t, o.created, "order_created_cancelled_during_charge_time_edges.json")
		s.record(t, o.cancelled, "order_cancelled_refunded_time_edges.json")
	})

	// The provider commits the charge and its answer is lost: the saga
	// reconciles (replaying the key) and adopts the existing PaymentIntent.
	t.Run("unknown_outcome_reconciled", func(t *testing.T) {
		o := s.newOrder(t) // not parallel: the fault is global to the simulator
		require.NoError(t, s.sim.InjectFault(providersim.Fault{Operation: providersim.OperationPaymentIntentsCreate, Fault: "timeout_after_commit"}))
		saga := s.start(t, handoff.OrderCreatedWorkflowName, o.createdInput(t, "pm_card_visa"))
		var res handoff.SagaResult
		require.NoError(t, saga.Get(ctxFor(t), &res))

		require.Equal(t, handoff.SagaConfirmed, res.Outcome)
		pis, _, kinds := s.effectsOf(o.id)
		require.Len(t, pis, 1, "one PaymentIntent, never a second")
		require.Equal(t, res.PaymentIntentID, pis[0].ID)
		require.Equal(t, []string{"confirmation"}, kinds)
		s.record(t, o.created, "order_created_unknown_outcome.json")
		s.record(t, o.created, "order_created_unknown_outcome_time_edges.json")
	})

	// The cancel is in the saga's very first workflow task (signal-with-start):
	// nothing is ever charged.
	t.Run("cancel_before_the_charge", func(t *testing.T) {
		t.Parallel()
		o := s.newOrder(t)
		in := o.createdInput(t, "pm_card_visa")
		opts := s.startOpts(in.EventID)
		opts.TypedSearchAttributes = temporal.NewSearchAttributes(orderIDKey.ValueSet(o.id))
		saga, err := s.c.SignalWithStartWorkflow(ctxFor(t), in.EventID, handoff.SignalCancel,
			handoff.CancelRequest{CancelEventID: o.cancelled}, opts, handoff.OrderCreatedWorkflowName, in)
		require.NoError(t, err)
		var cres CancelResult
		require.NoError(t, s.start(t, handoff.OrderCancelledWorkflowName, o.cancelledInput(t)).Get(ctxFor(t), &cres))
		var sres handoff.SagaResult
		require.NoError(t, saga.Get(ctxFor(t), &sres))

		require.Equal(t, handoff.SagaStopped, sres.Outcome)
		require.False(t, cres.Charged)
		st, _, _ := s.status(t, o.id)
		require.Equal(t, "cancelled", st)
		pis, _, kinds := s.effectsOf(o.id)
		require.Empty(t, pis)
		require.Equal(t, []string{"cancellation"}, kinds)
		s.record(t, o.created, "order_created_cancelled_before_charge.json")
	})
}
