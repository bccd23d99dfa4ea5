// Package temporalpub is the outbox relay's Temporal publisher: it starts one
// workflow per outbox event, with the event's ID as the workflow ID, so a
// second start of the same event (the relay publishes at least once) is
// refused by Temporal and counted as an acknowledgement.
//
// A signal route ([Route.Signal]) delivers its events as signals instead,
// to a workflow named from the event (the order's saga, say), with
// Signal-With-Start so that a workflow not started yet is, or, on a route
// without a Workflow, only as a signal; the workflow deduplicates them by
// event ID with package eventsignal, since Temporal does not. A closed
// target is never run again by a late event: the event starts a workflow
// of its own (Route.ClosedWorkflow) or is quarantined, and so does one
// whose target Temporal forgot, on a route that only signals.
//
// Which workflow an event starts, on which task queue and with which search
// attributes, is its [Route]'s to say: the publisher sets no search
// attribute of its own, so a namespace that registered none accepts every
// start of a route that asks for none. The workflows run in the namespace
// of the client [New] is given, whose retention bounds replays. Every
// workflow it starts takes one argument, the event's envelope [EventInput].
package temporalpub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/promreg"
)

// Config configures a [Publisher].
type Config struct {
	// TaskQueue receives the started workflows of every route that names no
	// task queue of its own (OUTFLOW_TASK_QUEUE). Optional: defaulted to
	// "orders", the queue of outflow's order app.
	TaskQueue string
	// Namespace is the namespace the client starts workflows in, the one it
	// was made with (client.Options.Namespace). Optional: defaulted to
	// "default", as for the SDK. [New] takes it from the options it is
	// given.
	Namespace string
	// Routes maps an event type to its workflow, task queue, search
	// attributes and payload validation. Mandatory: the publisher knows no
	// event types of its own. An event whose type is missing, or whose
	// payload its Validate rejects, can never succeed: Publish returns a
	// permanent error and the relay quarantines it. outflow's order app
	// passes routes.Orders(); the starter without Go wiring, the routes of
	// OUTFLOW_ROUTES.
	Routes Routes
	// Logger records each duplicate start Temporal absorbed (the ACK gap at
	// work). Optional: defaulted to no logging.
	Logger *slog.Logger
	// Registerer receives outbox_duplicate_starts_total and
	// outbox_replays_refused_total. Optional: defaulted to none. Publishers
	// that share a Registerer share these two counters, as relays share
	// theirs: a second publisher reuses the collectors the first one
	// registered (prometheus.AlreadyRegisteredError), so each counter adds
	// up the duplicates (or refused replays) of both. A collector of another
	// kind already registered under one of these names makes New fail.
	Registerer prometheus.Registerer
	// ReplayHorizon, when shorter than the namespace retention, refuses
	// replays of events older than it too (OUTFLOW_REPLAY_HORIZON).
	// Optional: defaulted to the namespace retention.
	ReplayHorizon time.Duration
	// Now is the clock that ages events against the retention. Optional:
	// defaulted to time.Now.
	Now func() time.Time
}

// defaultTaskQueue is Config.TaskQueue's default: the order app's queue
// (handoff.DefaultTaskQueue), from when the publisher served only that app.
const defaultTaskQueue = "orders"

// Publisher implements [outbox.Publisher] with client.ExecuteWorkflow. It is
// safe for concurrent use.
type Publisher struct {
	client    client.Client
	taskQueue string
	routes    Routes
	logger    *slog.Logger
	dups      prometheus.Counter
	refused   prometheus.Counter
	retention *retention
	horizon   time.Duration
	now       func() time.Time
}

var (
	_ outbox.Publisher = (*Publisher)(nil)
	_ outbox.Prober    = (*Publisher)(nil)
)

// New returns a publisher that starts workflows through c.
//
// opts are the options c was made with (client.Dial(opts),
// client.NewLazyClient(opts)); New reads only opts.Namespace, the
// namespace c starts workflows in ("default" when empty, as for the SDK).
// The publisher reads that namespace's retention (DescribeNamespace) to
// keep replays single, and probes it while Temporal does not answer. The
// SDK's client does not tell its namespace (go.temporal.io/sdk v1.51 has no
// accessor for it), and a namespace configured apart from the client could
// only disagree with the one the starts go to, so the options the client
// was made from are the source. A caller holding only a client uses
// [NewFromClient].
func New(c client.Client, opts client.Options, cfg Config) (*Publisher, error) {
	if opts.Namespace != "" && cfg.Namespace != "" && opts.Namespace != cfg.Namespace {
		return nil, fmt.Errorf("temporalpub: Config.Namespace %q is not the client's namespace %q: leave Config.Namespace empty", cfg.Namespace, opts.Namespace)
	}
	if opts.Namespace != "" {
		cfg.Namespace = opts.Namespace
	}
	return NewFromClient(c, cfg)
}

// NewFromClient is [New] for a caller holding only a client: the
// publisher starts workflows through c in cfg.Namespace ("default" when
// empty, the SDK's default), and every other setting has its default.
//
//	pub, err := temporalpub.NewFromClient(c, temporalpub.Config{Routes: routes})
func NewFromClient(c client.Client, cfg Config) (*Publisher, error) {
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = defaultTaskQueue
	}
	if len(cfg.Routes) == 0 {
		return nil, errors.New("temporalpub: Config.Routes is empty: pass the workflow of every event type the relay publishes (outflow's order app passes routes.Orders())")
	}
	if err := cfg.Routes.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	dups := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "outbox_duplicate_starts_total",
		Help: "Workflow starts Temporal refused because the event's workflow already exists: re-deliveries absorbed by the workflow ID.",
	})
	refused := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "outbox_replays_refused_total",
		Help: "Replayed events not started again because they are older than the namespace retention: Temporal may have forgotten their first run, so a start could run them twice.",
	})
	if cfg.Registerer != nil {
		var err error
		if dups, err = promreg.Register(cfg.Registerer, dups); err != nil {
			return nil, err
		}
		if refused, err = promreg.Register(cfg.Registerer, refused); err != nil {
			return nil, err
		}
	}
	namespace := cfg.Namespace
	if namespace == "" {
		namespace = client.DefaultNamespace
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Publisher{
		client:    c,
		taskQueue: cfg.TaskQueue,
		routes:    cfg.Routes,
		logger:    cfg.Logger,
		dups:      dups,
		refused:   refused,
		retention: &retention{client: c, namespace: namespace, now: cfg.Now},
		horizon:   cfg.ReplayHorizon,
		now:       cfg.Now,
	}, nil
}

// Namespace is the namespace the publisher starts workflows in and reads
// the retention of: the namespace of the client options New was given, or
// Config.Namespace.
func (p *Publisher) Namespace() string { return p.retention.namespace }

// Retention returns the namespace's retention as the publisher last read it
// (reading it now if it never did or the value is stale).
func (p *Publisher) Retention(ctx context.Context) (time.Duration, error) {
	return p.retention.get(ctx)
}

// delivery tells the workflow what is known about earlier runs of e (see
// [EventInput.Delivery]), and refuses a replay that Temporal may no
// longer be able to keep single.
//
// A workflow ID is refused a second start only while Temporal keeps the
// closed run: for the namespace retention after it closed. A run closes
// after its event committed, so an event younger than the retention has any
// earlier run still on record. An older one may not: a replay of it is
// acknowledged without a start (ok false), and a re-delivery of it is
// started with an unknown delivery, which makes the workflow ask the
// provider before it charges.
func (p *Publisher) delivery(ctx context.Context, e outbox.Event) (delivery string, ok bool, err error) {
	ret, rerr := p.retention.get(ctx)
	age := p.now().Sub(e.OccurredAt)
	horizon := ret
	if p.horizon > 0 && p.horizon < horizon {
		horizon = p.horizon
	}
	switch {
	case e.Replay && rerr != nil:
		return "", false, fmt.Errorf("temporalpub: replay of event %s: %w (a replay is started only once the retention is known)", e.ID, rerr)
	case e.Replay && age >= horizon:
		p.refused.Inc()
		p.logger.Warn("replay refused: the event is older than the replay horizon, behind which Temporal may have forgotten its first run and a new start could run it twice",
			"event_id", e.ID, "aggregate_id", e.AggregateID, "age", age.Round(time.Second), "horizon", horizon, "namespace_retention", ret)
		return "", false, nil
	case e.Replay:
		return DeliveryReplay, true, nil
	case rerr != nil || age >= ret:
		return "", true, nil
	}
	return DeliveryFirst, true, nil
}

// Publish starts the event's workflow and returns nil once Temporal has
// accepted the start, or answered that a workflow with this ID already
// exists (started by an earlier attempt whose acknowledgement was lost, or,
// for a replayed event, a run that completed or is still running). See
// [ReusePolicy] for when a replay starts a new run.
//
// On a signal route it returns nil once Temporal accepted the signal (and
// the start, when the target did not exist and the route has a Workflow);
// when the target already closed, or does not exist on a route without a
// Workflow, it starts the route's ClosedWorkflow for the event, or without
// one returns a permanent error (see [Route.Signal]).
func (p *Publisher) Publish(ctx context.Context, e outbox.Event) error {
	route, ok := p.routes[e.Type]
	if !ok {
		return p.permanentUnlessStarted(ctx, e, fmt.Errorf("temporalpub: event type %q (event %s) has no workflow; add a route for it to the relay's routes (Config.Routes; the starter's OUTFLOW_ROUTES) or skip the event with outboxctl",
			e.Type, e.ID))
	}
	if route.Validate != nil {
		if err := route.Validate(e.SchemaVersion, e.Payload); err != nil {
			return p.permanentUnlessStarted(ctx, e, fmt.Errorf("temporalpub: event %s (%s v%d) has a payload its workflow cannot process: %w",
				e.ID, e.Type, e.SchemaVersion, err))
		}
	}
	delivery, ok, err := p.delivery(ctx, e)
	if err != nil {
		return whoseFault(err)
	}
	if !ok {
		return nil // acknowledged: the event stays as published as it was
	}
	taskQueue := route.TaskQueue
	if taskQueue == "" {
		taskQueue = p.taskQueue
	}
	var attrs temporal.SearchAttributes
	if route.SearchAttributes != nil {
		attrs = route.SearchAttributes(e)
	}
	summary, details := route.describe(e)
	opts := client.StartWorkflowOptions{
		ID:                       e.ID.String(),
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    ReusePolicy(e),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		// Report the duplicate as an error instead of returning the running
		// run silently, so both cases are handled (and logged) alike.
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes:                    attrs,
		StaticSummary:                            summary,
		StaticDetails:                            details,
		Memo: map[string]any{
			"aggregate_type":     e.AggregateType,
			"aggregate_id":       e.AggregateID,
			"aggregate_sequence": e.Sequence,
			"schema_version":     e.SchemaVersion,
			"event_type":         e.Type,
			"delivery":           delivery,
		},
	}
	input := InputOf(e)
	input.Delivery = delivery
	if route.Signal != "" {
		return p.signal(ctx, e, route, opts, input)
	}
	return p.start(ctx, e, route.Workflow, opts, input)
}

// start starts e's own workflow of type workflowType.
func (p *Publisher) start(ctx context.Context, e outbox.Event, workflowType string, opts client.StartWorkflowOptions, input EventInput) error {
	_, err := p.client.ExecuteWorkflow(ctx, opts, workflowType, input)
	if err == nil {
		return nil
	}
	if IsAlreadyStarted(err) {
		p.dups.Inc()
		p.logger.Info("workflow already started: duplicate start absorbed", "event_id", e.ID, "workflow", workflowType,
			"aggregate_id", e.AggregateID, "replay", e.Replay)
		return nil
	}
	return whoseFault(fmt.Errorf("temporalpub: start %s for event %s: %w", workflowType, e.ID, err))
}

// signal delivers e as route's signal to the workflow route.WorkflowID
// names, starting it when it does not exist and the route has a Workflow
// (see [Route.Signal]). opts are the options e's start would have, input
// its envelope.
func (p *Publisher) signal(ctx context.Context, e outbox.Event, route Route, opts client.StartWorkflowOptions, input EventInput) error {
	id := route.WorkflowID(e)
	if id == "" {
		return outbox.Permanent(fmt.Errorf("temporalpub: event %s (%s) names no workflow to signal: its route's WorkflowID returned \"\"", e.ID, e.Type))
	}
	if route.Workflow == "" {
		// Signal only: the target is never started here, so a target that
		// is not running (closed, forgotten behind the retention, or never
		// started) is refused with NotFound and handled as a closed one.
		err := p.client.SignalWorkflow(ctx, id, "", route.Signal, input)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return p.lateForTarget(ctx, e, route, id, "the workflow is closed or does not exist (Temporal forgets a closed run after the namespace retention)", opts, input, err)
		}
		if err != nil {
			return whoseFault(fmt.Errorf("temporalpub: signal %s of event %s to workflow %s: %w", route.Signal, e.ID, id, err))
		}
		return nil
	}
	start := opts
	start.ID = id
	// A workflow ID with a run on record, running or closed, is never
	// started again by a signal, a replay's included: a running target
	// takes the signal (USE_EXISTING), a closed one refuses it.
	start.WorkflowIDReusePolicy = enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
	start.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	start.WorkflowExecutionErrorWhenAlreadyStarted = false
	_, err := p.client.SignalWithStartWorkflow(ctx, id, route.Signal, input, start, route.Workflow)
	if err == nil {
		return nil
	}
	if IsAlreadyStarted(err) {
		return p.lateForTarget(ctx, e, route, id, "the workflow already closed", opts, input, err)
	}
	return whoseFault(fmt.Errorf("temporalpub: signal %s of event %s to workflow %s (%s): %w", route.Signal, e.ID, id, route.Workflow, err))
}

// lateForTarget handles an event whose target id refused its signal
// (refusal, why): it starts the route's ClosedWorkflow for the event with
// opts, the options of e's own start, or without one returns the refusal
// as the event's permanent fault.
func (p *Publisher) lateForTarget(ctx context.Context, e outbox.Event, route Route, id, why string, opts client.StartWorkflowOptions, input EventInput, refusal error) error {
	if route.ClosedWorkflow != "" {
		p.logger.Info("signal refused: "+why+"; the event starts its own workflow",
			"event_id", e.ID, "event_type", e.Type, "aggregate_id", e.AggregateID, "workflow_id", id, "signal", route.Signal, "workflow", route.ClosedWorkflow)
		return p.start(ctx, e, route.ClosedWorkflow, opts, input)
	}
	p.logger.Warn("signal refused: "+why+", and a late event must not run it again; quarantined for an operator",
		"event_id", e.ID, "event_type", e.Type, "aggregate_id", e.AggregateID, "workflow_id", id, "signal", route.Signal)
	return outbox.Permanent(fmt.Errorf("temporalpub: signal %s of event %s to workflow %s: %s, and a signal never starts a closed workflow again; "+
		"handle the event otherwise, then skip it (outboxctl skip): %w", route.Signal, e.ID, id, why, refusal))
}

// whoseFault classifies a failed start for the relay (outbox's fault.go) by
// Temporal's status code:
//
//   - A request larger than Temporal takes ([tooLarge]): permanent
//     ([outbox.Permanent]), the relay quarantines the event at once. It is
//     the event's own fault, whatever the code says: ResourceExhausted for
//     the gRPC message limit, InvalidArgument for the blob and memo limits.
//   - ResourceExhausted (a namespace's rate quota, a busy history shard):
//     [outbox.Throttled]; the relay slows down and counts no attempt.
//   - Unavailable, DeadlineExceeded, Internal, Canceled, Aborted,
//     Unauthenticated, PermissionDenied (an expired certificate or API key),
//     and an unknown, inactive or unavailable namespace (a configuration
//     mistake after a deploy): [outbox.SinkUnavailable]; no attempt is
//     counted, and the relay's breaker opens when they keep coming.
//   - Everything else stays the event's: InvalidArgument for this start
//     (a memo or search attribute Temporal refuses), and errors that are no
//     service error at all (a payload the data converter cannot encode).
//     Its attempts count, with backoff and quarantine.
func whoseFault(err error) error {
	var (
		nsNotFound    *serviceerror.NamespaceNotFound
		nsNotActive   *serviceerror.NamespaceNotActive
		nsUnavailable *serviceerror.NamespaceUnavailable
		nsInvalid     *serviceerror.NamespaceInvalidState
	)
	switch {
	case errors.As(err, &nsNotFound), errors.As(err, &nsNotActive), errors.As(err, &nsUnavailable), errors.As(err, &nsInvalid):
		return outbox.SinkUnavailable(err)
	case tooLarge(err):
		return outbox.Permanent(fmt.Errorf("%w (the event is larger than Temporal accepts: never accepted, however often it is retried; "+
			"shrink its payload or raise the limit, then retry it, or skip it)", err))
	}
	// ToStatus reads the code of a service error anywhere in err's chain,
	// and of a context's end; anything else is Unknown.
	switch serviceerror.ToStatus(err).Code() {
	case codes.ResourceExhausted:
		return outbox.Throttled(err)
	case codes.Unavailable, codes.DeadlineExceeded, codes.Internal, codes.Canceled, codes.Aborted,
		codes.Unauthenticated, codes.PermissionDenied:
		return outbox.SinkUnavailable(err)
	}
	return err
}

// tooLarge reports whether err is Temporal's (or gRPC's) refusal of a
// request for its size, which no retry changes:
//
//   - ResourceExhausted "grpc: received message larger than max" (or "...
//     after decompression"): the frontend's gRPC message limit, 4 MiB,
//     refused on the server's side; "grpc: trying to send message larger
//     than max": the client's own limit (client.ConnectionOptions.
//     MaxPayloadSize), refused before sending. The SDK does not retry them
//     either.
//   - InvalidArgument "Blob data size exceeds limit." or "Memo size exceeds
//     limit.": the namespace's per-payload limits (dynamic config
//     limit.blobSize.error and limit.memoSize.error, 2 MiB by default).
//
// A ResourceExhausted without these words is a throttle (a rate quota).
func tooLarge(err error) bool {
	if err == nil {
		return false
	}
	st := serviceerror.ToStatus(err)
	msg := st.Message()
	switch st.Code() {
	case codes.ResourceExhausted:
		return strings.Contains(msg, "larger than max") || strings.Contains(msg, "message too large")
	case codes.InvalidArgument:
		return strings.Contains(msg, "Blob data size exceeds limit") || strings.Contains(msg, "Memo size exceeds limit")
	}
	return false
}

// ThrottleInterceptor is a gRPC client interceptor for the Temporal client a
// Publisher starts workflows through (client.Options.ConnectionOptions.
// DialOptions, with grpc.WithChainUnaryInterceptor). The SDK retries a
// request Temporal throttled (ResourceExhausted) inside the call until its
// deadline, so the relay would only see a slow start; this interceptor runs
// inside the SDK's retries and reports each throttled attempt to the relay
// ([outbox.ReportThrottle]), which then publishes fewer at once and counts
// it in outbox_sink_throttled_total. A request refused for its size
// (ResourceExhausted too, see [tooLarge]) is no throttle and is not
// reported. Calls outside a relay's Publish are not affected.
func ThrottleInterceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if status.Code(err) == codes.ResourceExhausted && !tooLarge(err) {
			outbox.ReportThrottle(ctx)
		}
		return err
	}
}

// Probe asks Temporal for the namespace's description, the cheapest call
// that tells whether the relay's starts can be answered: while the relay's
// breaker is open it probes with this ([outbox.Prober]) instead of
// publishing.
func (p *Publisher) Probe(ctx context.Context) error {
	_, err := NamespaceRetention(ctx, p.client, p.retention.namespace)
	return err
}

// permanentUnlessStarted returns err as permanent (the relay quarantines the
// event) unless the event's workflow already exists: then an earlier
// delivery, by a relay with other routes or looser validation (a rolling
// deploy), was accepted and only its mark was lost, and this delivery is
// acknowledged like any duplicate. When Temporal cannot say, the error is
// transient and the relay asks again after a backoff.
func (p *Publisher) permanentUnlessStarted(ctx context.Context, e outbox.Event, err error) error {
	if p.client == nil {
		return outbox.Permanent(err)
	}
	_, derr := p.client.DescribeWorkflow(ctx, e.ID.String(), "")
	var notFound *serviceerror.NotFound
	switch {
	case derr == nil:
		p.dups.Inc()
		p.logger.Info("workflow already started by an earlier delivery; acknowledged although this relay cannot start it",
			"event_id", e.ID, "event_type", e.Type, "aggregate_id", e.AggregateID, "reason", err.Error())
		return nil
	case errors.As(derr, &notFound):
		return outbox.Permanent(err)
	default:
		// Temporal could not say: the sink's fault until it can.
		return whoseFault(fmt.Errorf("%w (and whether its workflow already exists is unknown: %w)", err, derr))
	}
}

// ReusePolicy is the workflow ID reuse policy of e's start.
//
// A first delivery uses REJECT_DUPLICATE: one workflow per event, ever; a
// duplicate start (the relay publishes at least once) is refused whether the
// first run is still running or already closed, and the refusal is the
// acknowledgement.
//
// An operator's replay (e.Replay, see outboxops.Replay) uses
// ALLOW_DUPLICATE_FAILED_ONLY: a run that completed still refuses the start
// (the replay is acknowledged and the event stays one run), a running one
// refuses it too (the conflict policy is FAIL), but a run that failed, was
// terminated, cancelled or timed out lets a new run start under the same
// workflow ID. Its effects stay single: provider idempotency keys derive from
// the event ID and the step, and local effects go through the
// processed_events inbox.
func ReusePolicy(e outbox.Event) enumspb.WorkflowIdReusePolicy {
	if e.Replay {
		return enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY
	}
	return enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE
}

// IsAlreadyStarted reports whether err is Temporal's answer that a workflow
// with this ID already exists, anywhere in err's chain.
func IsAlreadyStarted(err error) bool {
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	return errors.As(err, &already)
}
