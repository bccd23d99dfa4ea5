package temporalpub_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// TestEveryEventGetsOneWorkflow: each committed event gets exactly one
// workflow, ID = event_id, of the routed type, with the OrderId search
// attribute and the memo, and its row is marked. A second publish of the same
// event is absorbed as an acknowledgement.
func TestEveryEventGetsOneWorkflow(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	tq := taskQueue(t)
	reg := prometheus.NewRegistry()
	pub := newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: tq, Registerer: reg})
	var events []outbox.Event
	for range 5 {
		orderID := uuid.NewString()
		created := testdb.Enqueue(t, pool, orderCreated(t, orderID))[0]
		events = append(events, created)
		events = append(events, testdb.Enqueue(t, pool, orderCancelled(t, orderID, created.ID))...)
	}
	r, err := outbox.NewRelay(pool, pub, outbox.RelayConfig{Logger: quietLogger()})
	require.NoError(t, err)
	runRelay(t, r)
	require.Eventually(t, func() bool { return allPublished(pool, events) }, 30*time.Second, 20*time.Millisecond)

	for _, e := range events {
		info := describe(t, e.ID)
		want := orderCreatedWorkflow
		if e.Type == eventOrderCancelled {
			want = orderCancelledWorkflow
		}
		require.Equal(t, want, info.GetType().GetName())
		require.Equal(t, tq, info.GetTaskQueue())
		require.Equal(t, e.AggregateID, searchAttribute(t, info, searchAttributeOrderID))
		require.Equal(t, e.AggregateID, memoValue[string](t, info, "aggregate_id"))
		require.Equal(t, "order", memoValue[string](t, info, "aggregate_type"))
		require.Equal(t, e.Sequence, memoValue[int64](t, info, "aggregate_sequence"))
		require.Equal(t, 1, memoValue[int](t, info, "schema_version"))
		require.Equal(t, e.Type, memoValue[string](t, info, "event_type"))

		// What the Temporal UI shows (orderRoutes' Describe): the order
		// and its total, never the customer's email or payment method.
		summary, details := userMetadata(t, temporal.Client(), e.ID)
		require.Contains(t, details, "**Event** "+e.ID.String())
		require.NotContains(t, summary+details, "@", "no email address")
		require.NotContains(t, summary+details, "pm_", "no payment method")
		if e.Type == eventOrderCreated {
			require.Regexp(t, `^Payment of order `+e.AggregateID+`: \d+\.\d\d [A-Z]{3}$`, summary)
		} else {
			require.Equal(t, "Cancel of order "+e.AggregateID, summary)
		}
	}

	// The relay's at-least-once duplicate: acknowledged, counted, still one
	// workflow.
	require.NoError(t, pub.Publish(context.Background(), events[0]))
	require.Equal(t, 1.0, promtest.Value(t, reg, "outbox_duplicate_starts_total"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = temporal.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: events[0].ID.String(), TaskQueue: tq,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
	}, orderCreatedWorkflow)
	require.True(t, temporalpub.IsAlreadyStarted(err), "got %v", err)
	require.True(t, temporalpub.IsAlreadyStarted(fmt.Errorf("wrapped: %w", err)), "detected through wrapping")
	countOn(t, tq, len(events))
}

// TestPoisonEventsAreQuarantinedAndHoldBackOnlyTheirAggregate: an event type
// without a route and a payload its workflow cannot process are quarantined
// at the first attempt, no workflow is started for them, their aggregates'
// later events wait, and other aggregates flow.
func TestPoisonEventsAreQuarantinedAndHoldBackOnlyTheirAggregate(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	tq := taskQueue(t)
	r, err := outbox.NewRelay(pool, newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: tq}),
		outbox.RelayConfig{Logger: quietLogger(), PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)

	noRoute, err := outbox.NewEvent("order", "o-noroute", "OrderTeleported", 1, map[string]string{"order_id": "o-noroute"})
	require.NoError(t, err)
	badPayload := orderCreated(t, "o-bad")
	badPayload.Payload = []byte(`{"order_id":"o-bad"}`) // no email, currency, amount...
	poison := []outbox.Event{
		testdb.Enqueue(t, pool, noRoute)[0],
		testdb.Enqueue(t, pool, badPayload)[0],
	}
	heldBack := []outbox.Event{
		testdb.Enqueue(t, pool, orderCancelled(t, "o-noroute", poison[0].ID))[0],
		testdb.Enqueue(t, pool, orderCancelled(t, "o-bad", poison[1].ID))[0],
	}
	healthy := testdb.Enqueue(t, pool, orderCreated(t, "o-good"))
	runRelay(t, r)
	require.Eventually(t, func() bool { return allPublished(pool, healthy) }, 30*time.Second, 20*time.Millisecond)
	late := testdb.Enqueue(t, pool, orderCreated(t, "o-late"))
	require.Eventually(t, func() bool { return allPublished(pool, late) }, 30*time.Second, 20*time.Millisecond)

	ctx := context.Background()
	for _, e := range poison {
		var attempts int
		var quarantined *time.Time
		var lastError string
		require.NoError(t, pool.QueryRow(ctx, `SELECT attempt_count, quarantined_at, last_error FROM outbox_events WHERE event_id = $1`, e.ID).
			Scan(&attempts, &quarantined, &lastError))
		require.NotNil(t, quarantined, "event %s (%s) quarantined", e.ID, e.Type)
		require.Equal(t, 1, attempts, "quarantined at once")
		t.Logf("quarantined %s: %s", e.Type, lastError)
		_, err := temporal.Client().DescribeWorkflow(ctx, e.ID.String(), "")
		require.ErrorAs(t, err, new(*serviceerror.NotFound), "no workflow for a poison event")
	}
	for _, e := range heldBack {
		var attempts int
		var publishedAt *time.Time
		require.NoError(t, pool.QueryRow(ctx, `SELECT attempt_count, published_at FROM outbox_events WHERE event_id = $1`, e.ID).
			Scan(&attempts, &publishedAt))
		require.Nil(t, publishedAt)
		require.Zero(t, attempts, "never claimed behind its quarantined predecessor")
	}
}

// TestFourRelaysKeepOneLanePerOrder: four relays over 200 orders × 5 events,
// committed while they run. Every event is started exactly once, by one
// owner, and every order's workflows were started in sequence order — by the
// acknowledgement order and by Temporal's own start times.
func TestFourRelaysKeepOneLanePerOrder(t *testing.T) {
	t.Parallel()
	const nOrders, perOrder = 200, 5
	pool, _ := testdb.New(t)
	tq := taskQueue(t)
	routes := map[string]temporalpub.Route{"OrderStep": {Workflow: "OrderStepWorkflow"}}
	rec := &recorder{}
	for i := range 4 {
		owner := fmt.Sprintf("relay-%d-%s", i, tq)
		pub := rec.wrap(owner, newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: tq, Routes: routes}))
		r, err := outbox.NewRelay(pool, pub, outbox.RelayConfig{Owner: owner, Logger: quietLogger(), BatchSize: 50, MaxInFlight: 8})
		require.NoError(t, err)
		runRelay(t, r)
	}

	var (
		mu     sync.Mutex
		events []outbox.Event
		wg     sync.WaitGroup
		errs   = make(chan error, 4)
	)
	for w := range 4 {
		wg.Go(func() {
			for step := range perOrder {
				for o := w; o < nOrders; o += 4 {
					id := fmt.Sprintf("%s-order-%03d", tq, o)
					e, err := outbox.NewEvent("order", id, "OrderStep", 1, map[string]any{"order_id": id, "step": step + 1})
					if err == nil {
						var out []outbox.Event
						if out, err = enqueueErr(pool, e); err == nil {
							mu.Lock()
							events = append(events, out...)
							mu.Unlock()
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, events, nOrders*perOrder)
	require.Eventually(t, func() bool { return allPublished(pool, events) }, 3*time.Minute, 100*time.Millisecond)

	rec.mu.Lock()
	acks := append([]ack(nil), rec.acks...)
	rec.mu.Unlock()
	byEvent := map[uuid.UUID][]string{}
	next := map[string]int64{}
	for _, a := range acks {
		byEvent[a.event.ID] = append(byEvent[a.event.ID], a.owner)
		require.Equal(t, next[a.event.AggregateID]+1, a.event.Sequence, "order %s: event %d acknowledged out of order", a.event.AggregateID, a.event.Sequence)
		next[a.event.AggregateID] = a.event.Sequence
	}
	owners := map[string]int{}
	for _, e := range events {
		require.Len(t, byEvent[e.ID], 1, "event %s published once, by one owner", e.ID)
		owners[byEvent[e.ID][0]]++
	}
	t.Logf("events per relay: %v (publish calls: %d)", owners, rec.calls)
	require.Len(t, owners, 4, "all four relays took part")

	// Temporal's view: start times increase along every order's sequence.
	starts := make(map[uuid.UUID]time.Time, len(events))
	var smu sync.Mutex
	jobs := make(chan outbox.Event)
	var dwg sync.WaitGroup
	for range 8 {
		dwg.Go(func() {
			for e := range jobs {
				info := describe(t, e.ID)
				smu.Lock()
				starts[e.ID] = info.GetStartTime().AsTime()
				smu.Unlock()
			}
		})
	}
	for _, e := range events {
		jobs <- e
	}
	close(jobs)
	dwg.Wait()
	bySeq := map[string]map[int64]uuid.UUID{}
	for _, e := range events {
		if bySeq[e.AggregateID] == nil {
			bySeq[e.AggregateID] = map[int64]uuid.UUID{}
		}
		bySeq[e.AggregateID][e.Sequence] = e.ID
	}
	for agg, seqs := range bySeq {
		for s := int64(2); s <= perOrder; s++ {
			require.True(t, starts[seqs[s]].After(starts[seqs[s-1]]), "order %s: workflow %d started before %d", agg, s, s-1)
		}
	}
	countOn(t, tq, len(events))
}

// TestTemporalUnavailable: Temporal is down while events are committed, for
// longer than the whole backoff schedule of a small MaxAttempts. The starts
// fail for the sink's fault: the relay's breaker opens (outbox_sink_up 0),
// no attempt is counted and nothing is quarantined, the errors are recorded;
// it probes the namespace until the server comes back on the same state and
// port, then catches up. An unroutable event committed meanwhile is
// quarantined once Temporal can say that no workflow of it exists: its own
// fault.
func TestTemporalUnavailable(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	port, err := ports.Free()
	require.NoError(t, err)
	dbFile := filepath.Join(t.TempDir(), "temporal.db")
	srv := devserver.Start(t, devserver.Options{DBFile: dbFile, Port: port})
	addr := srv.Address()
	require.NoError(t, srv.Stop())

	c, err := client.NewLazyClient(client.Options{HostPort: addr, Logger: log.NewStructuredLogger(quietLogger())})
	require.NoError(t, err)
	defer c.Close()
	tq := taskQueue(t)
	var events []outbox.Event
	for range 10 {
		events = append(events, testdb.Enqueue(t, pool, orderCreated(t, uuid.NewString()))...)
	}
	poisonEvent, err := outbox.NewEvent(orderAggregate, uuid.NewString(), "OrderTeleported", 1, map[string]string{})
	require.NoError(t, err)
	poison := testdb.Enqueue(t, pool, poisonEvent)[0]
	reg := prometheus.NewRegistry()
	r, err := outbox.NewRelay(pool, newPublisher(t, c, temporalpub.Config{TaskQueue: tq}), outbox.RelayConfig{
		Logger: quietLogger(), Lease: 5 * time.Second, PublishTimeout: time.Second, Registerer: reg,
		MaxAttempts: 2, RetryBase: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond, PollInterval: 200 * time.Millisecond,
		BreakerThreshold: 3, ProbeBase: 50 * time.Millisecond, ProbeMax: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	runRelay(t, r)

	ctx := context.Background()
	ids := make([]uuid.UUID, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	require.Eventually(t, func() bool {
		up, err := promtest.Sum(reg, "outbox_sink_up")
		return err == nil && up == 0
	}, time.Minute, 50*time.Millisecond, "the breaker opens while Temporal is down")
	// The whole backoff schedule of two attempts is well under a second.
	require.Eventually(t, func() bool {
		var failed int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_events
			WHERE event_id = ANY($1) AND last_error LIKE '%no attempt counted%' AND published_at IS NULL`, ids).Scan(&failed)
		return err == nil && failed > 0
	}, time.Minute, 50*time.Millisecond, "the sink's faults are recorded")
	var used, quarantined int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE attempt_count > 0 AND claim_until IS NULL),
		count(*) FILTER (WHERE quarantined_at IS NOT NULL) FROM outbox_events`).Scan(&used, &quarantined))
	require.Zero(t, used, "attempts used up by Temporal's outage")
	require.Zero(t, quarantined, "events quarantined for Temporal's outage")
	var lastError string
	require.NoError(t, pool.QueryRow(ctx, `SELECT last_error FROM outbox_events WHERE last_error IS NOT NULL LIMIT 1`).Scan(&lastError))
	t.Logf("while down: %s", lastError)

	srv = devserver.Start(t, devserver.Options{DBFile: dbFile, Port: port})
	require.Eventually(t, func() bool { return allPublished(pool, events) }, 2*time.Minute, 100*time.Millisecond,
		"the relay catches up once Temporal is back")
	for _, e := range events {
		_, err := srv.Client().DescribeWorkflow(ctx, e.ID.String(), "")
		require.NoError(t, err)
	}
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE quarantined_at IS NOT NULL) FROM outbox_events
		WHERE event_id = ANY($1)`, ids).Scan(&quarantined))
	require.Zero(t, quarantined)
	require.Eventually(t, func() bool {
		var q bool
		err := pool.QueryRow(ctx, `SELECT quarantined_at IS NOT NULL FROM outbox_events WHERE event_id = $1`, poison.ID).Scan(&q)
		return err == nil && q
	}, time.Minute, 100*time.Millisecond, "the unroutable event is quarantined after recovery: its own fault")
	up := promtest.Value(t, reg, "outbox_sink_up")
	require.Equal(t, 1.0, up)
}

// TestWhoseFaultByStatusCode: how a failed start is classified for the
// relay (the table in whoseFault's comment).
func TestWhoseFaultByStatusCode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err       error
		sink      bool
		throttled bool
		permanent bool
	}{
		{serviceerror.NewUnavailable("connection refused"), true, false, false},
		{serviceerror.NewDeadlineExceeded("deadline"), true, false, false},
		{serviceerror.NewInternal("shard"), true, false, false},
		{serviceerror.NewPermissionDenied("expired certificate", ""), true, false, false},
		{serviceerror.NewNamespaceNotFound("orders"), true, false, false},
		{serviceerror.NewResourceExhausted(enumspb.RESOURCE_EXHAUSTED_CAUSE_RPS_LIMIT, "namespace rps"), true, true, false},
		{serviceerror.NewResourceExhausted(enumspb.RESOURCE_EXHAUSTED_CAUSE_CONCURRENT_LIMIT, "namespace concurrent poller limit exceeded"), true, true, false},
		{context.DeadlineExceeded, true, false, false},
		{serviceerror.NewInvalidArgument("memo too large"), false, false, false},
		{errors.New("payload codec: no key"), false, false, false},
		// A request larger than Temporal takes: the event's, for good,
		// whichever side of the connection refused it.
		{status.Error(codes.ResourceExhausted, "grpc: received message larger than max (5242880 vs. 4194304)"), false, false, true},
		{status.Error(codes.ResourceExhausted, "grpc: received message after decompression larger than max 4194304"), false, false, true},
		{status.Error(codes.ResourceExhausted, "grpc: trying to send message larger than max (5242880 vs. 1048576)"), false, false, true},
		{serviceerror.NewInvalidArgument("Blob data size exceeds limit."), false, false, true},
		{serviceerror.NewInvalidArgument("Memo size exceeds limit."), false, false, true},
	} {
		err := temporalpub.WhoseFaultForTest(fmt.Errorf("temporalpub: start: %w", c.err))
		require.Equal(t, c.sink, errors.Is(err, outbox.ErrSinkUnavailable), "%v", c.err)
		require.Equal(t, c.throttled, errors.Is(err, outbox.ErrThrottled), "%v", c.err)
		require.Equal(t, c.permanent, errors.Is(err, outbox.ErrPermanent), "%v", c.err)
		require.ErrorIs(t, err, c.err, "the chain is kept")
	}
}

// TestUnroutableEventWhoseWorkflowExistsIsAcknowledged: a re-delivery
// judged by a relay that cannot route or validate the event (a rolling
// deploy) is not quarantined when the workflow of an earlier, accepted
// delivery exists.
func TestUnroutableEventWhoseWorkflowExistsIsAcknowledged(t *testing.T) {
	t.Parallel()
	tq := taskQueue(t)
	e := orderCreated(t, uuid.NewString())
	e.ID = uuid.New()
	strict := newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: tq, Routes: map[string]temporalpub.Route{"SomethingElse": {Workflow: "SomethingElseWorkflow"}}})
	require.ErrorIs(t, strict.Publish(context.Background(), e), outbox.ErrPermanent, "no workflow yet: poison")

	require.NoError(t, newPublisher(t, temporal.Client(), temporalpub.Config{TaskQueue: tq}).Publish(context.Background(), e))
	require.NoError(t, strict.Publish(context.Background(), e), "its workflow exists: acknowledged")
	countOn(t, tq, 1)
}

func TestPublishRejectsUnroutableEventsPermanently(t *testing.T) {
	t.Parallel()
	pub := newPublisher(t, nil, temporalpub.Config{})
	e, err := outbox.NewEvent("order", "x", "Nope", 1, map[string]string{})
	require.NoError(t, err)
	e.ID = uuid.New()
	require.ErrorIs(t, pub.Publish(context.Background(), e), outbox.ErrPermanent)
	bad := orderCreated(t, "x")
	bad.Payload = []byte(`{}`)
	err = pub.Publish(context.Background(), bad)
	require.ErrorIs(t, err, outbox.ErrPermanent)
	require.ErrorIs(t, err, errInvalidPayload)
	require.False(t, temporalpub.IsAlreadyStarted(errors.New("other")))
}

// TestThrottledNamespace: a dev server whose namespace accepts 5 requests a
// second (frontend.namespaceRPS: low enough that a relay on a loaded machine
// still goes beyond it; at 20 one did not, under a model check) and a
// backlog of 80 orders with
// MaxAttempts 1, so that one counted failure would quarantine an event.
// Temporal answers ResourceExhausted beyond its limit; the relay slows down
// and counts no attempt: every event is published, none quarantined, and
// the throttles are counted. The rate reached is logged beside the limit.
func TestThrottledNamespace(t *testing.T) {
	t.Parallel()
	const limit = 5
	pool, _ := testdb.New(t)
	srv := devserver.Start(t, devserver.Options{DynamicConfig: map[string]string{"frontend.namespaceRPS": fmt.Sprint(limit)}})
	tq := taskQueue(t)
	var events []outbox.Event
	for range 80 {
		events = append(events, testdb.Enqueue(t, pool, orderCreated(t, uuid.NewString()))...)
	}
	// The starter's client: the SDK retries throttled requests itself, and
	// the interceptor tells the relay of each.
	c, err := client.Dial(client.Options{HostPort: srv.Address(), Logger: log.NewStructuredLogger(quietLogger()),
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(temporalpub.ThrottleInterceptor())}}})
	require.NoError(t, err)
	defer c.Close()
	reg := prometheus.NewRegistry()
	r, err := outbox.NewRelay(pool, newPublisher(t, c, temporalpub.Config{TaskQueue: tq}), outbox.RelayConfig{
		Logger: quietLogger(), Registerer: reg, MaxAttempts: 1, MaxInFlight: 16, PollInterval: 100 * time.Millisecond,
	})
	require.NoError(t, err)
	start := time.Now()
	runRelay(t, r)
	require.Eventually(t, func() bool { return allPublished(pool, events) }, 3*time.Minute, 100*time.Millisecond,
		"every event published under the namespace's limit")
	took := time.Since(start)
	var quarantined int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM outbox_events WHERE quarantined_at IS NOT NULL`).Scan(&quarantined))
	require.Zero(t, quarantined, "a throttle quarantined events")
	throttled := promtest.Value(t, reg, "outbox_sink_throttled_total")
	require.Positive(t, throttled, "Temporal throttled the relay")
	t.Logf("%d starts in %s: %.1f/s against a namespace limit of %d requests/s; %v throttled publishes",
		len(events), took.Round(time.Millisecond), float64(len(events))/took.Seconds(), limit, throttled)
}
