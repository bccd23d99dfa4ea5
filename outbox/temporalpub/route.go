package temporalpub

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/outbox"
)

// Routes maps an event type (outbox.Event.Type) to the [Route] that starts
// its workflow or signals one.
type Routes map[string]Route

// Route says which workflow handles an event type, on which task queue and
// with which search attributes, and how to validate its payload before a
// workflow is started (or signalled) for it.
//
// A route is a start route by default: each event starts a workflow of its
// own, whose ID is the event's. With Signal set it is a signal route: each
// event is delivered as a signal to the workflow WorkflowID names (see
// [Route.Signal]).
type Route struct {
	// Workflow is the workflow type name: of the workflow each event starts,
	// or, on a signal route, of the workflow Signal-With-Start starts when
	// the target does not exist yet. Mandatory on a start route. Optional
	// on a signal route: unset, the route only signals and never starts
	// its target (see [Route.Signal]), which is what a target started
	// otherwise needs (a saga, started by its own event, whose run must
	// never begin from an empty input).
	Workflow string
	// TaskQueue receives this route's workflows. Optional: defaulted to
	// Config.TaskQueue.
	TaskQueue string
	// Validate rejects a payload no workflow run could ever process; the
	// relay quarantines such an event at once instead of retrying it.
	// Optional: defaulted to accepting every payload.
	Validate func(schemaVersion int, payload []byte) error
	// SearchAttributes returns the search attributes the event's workflow
	// is started with; it is called once Validate accepted the payload. The
	// order app's routes set OrderId to the order's id:
	//
	//	func(e outbox.Event) temporal.SearchAttributes {
	//		return temporal.NewSearchAttributes(routes.OrderIDKey.ValueSet(e.AggregateID))
	//	}
	//
	// Every attribute must be registered on the namespace (`temporal
	// operator search-attribute create`): Temporal refuses a start that
	// carries an unknown one (InvalidArgument), which counts as the event's
	// failure, so it is retried with backoff and quarantined after
	// MaxAttempts. Optional: defaulted to none, which every namespace
	// accepts.
	SearchAttributes func(outbox.Event) temporal.SearchAttributes
	// Describe returns what the Temporal UI and CLI show for the event's
	// workflow: a one-line summary and details (Markdown, may span lines),
	// the start's StaticSummary and StaticDetails. It is called once
	// Validate accepted the payload. Both are stored with the workflow
	// through the client's data converter (a codec may leave strings in
	// plaintext, as outflow's does, so that the UI lists them without a
	// codec server), and an operator reads them in every list: never put
	// personal data in them. A workflow keeps them current with
	// workflow.SetCurrentDetails. Optional: defaulted to the summary
	// "EVENT_TYPE AGGREGATE_TYPE AGGREGATE_ID" (what the memo carries
	// anyway) and no details. A replay's summary ends with " (replay)".
	Describe func(outbox.Event) (summary, details string)

	// Signal, when set, makes this a signal route: the event is delivered as
	// the signal of this name, its payload the event's [EventInput], to the
	// workflow whose ID WorkflowID returns (the order's saga, say).
	// Optional: unset, the route starts a workflow per event.
	//
	// With Workflow set the signal goes with Signal-With-Start: a workflow
	// of type Workflow is started on TaskQueue, with SearchAttributes,
	// Describe's summary and details and the memo of a start, when no
	// workflow of that ID exists yet; it is started with no argument (its
	// input's zero value) and finds the event as the first signal in its
	// channel. Without Workflow the event is only signalled: a target that
	// does not exist, because it never started or because Temporal forgot
	// it behind the namespace retention, is handled as a closed one (below).
	//
	// Per-aggregate order holds as for starts: the relay signals an
	// aggregate's next event only once Temporal accepted the previous one.
	// Events of different aggregates (or different outboxes) that signal one
	// workflow come in no set order.
	//
	// Delivery is at least once and Temporal does not deduplicate signals,
	// so a workflow receives the same event again after a relay lost its
	// mark: it receives through package eventsignal, which drops a second
	// delivery of an event ID, also across continue-as-new. The publisher
	// cannot tell such a re-delivery from a first one, so
	// outbox_duplicate_starts_total does not count it; the Receiver does
	// (Receiver.Duplicates). An operator's replay of the event signals it
	// again, and a Receiver that remembers the event drops it.
	//
	// A target that already closed is never run again by a late event:
	// Temporal refuses a signal to a closed run (NotFound), and a
	// Signal-With-Start goes with the reuse policy REJECT_DUPLICATE, so
	// Temporal refuses to start a new run under a workflow ID that has one
	// on record (WorkflowExecutionAlreadyStarted). With ClosedWorkflow set,
	// the event then starts a workflow of its own, as a start route's event
	// would.
	// Without it, Publish returns the refusal as the event's permanent
	// fault: the relay quarantines it at once, with an error naming the
	// closed workflow, for an operator to handle otherwise and skip
	// (outboxctl skip; a retry is refused again), and it holds back its
	// aggregate's later events like any quarantined event. A closed saga
	// re-run from a zero input by a late webhook could charge or refund
	// again; an event acknowledged into a closed workflow would be lost; a
	// quarantined one is neither. The price is rare and safe: a
	// re-delivery of an event the workflow did take, after which it closed
	// before the relay recorded the delivery, is refused too; the operator
	// finds its signal, whose payload carries the event ID, in the
	// workflow's history, and skips the event.
	//
	// Behind the namespace retention Temporal forgets a closed run. A late
	// event of a route without Workflow then finds no target and goes to
	// ClosedWorkflow (or quarantine) as for a closed one; with Workflow it
	// starts a new, empty run of the target, so such a route's target must
	// not be signalled by events older than the retention (the relay
	// refuses only replays that old).
	Signal string
	// WorkflowID returns the ID of the workflow the event signals: derived
	// from the event, never random (a re-delivery must reach the same
	// workflow). Mandatory on a signal route, and only there; an event for
	// which it returns "" is quarantined at once.
	WorkflowID func(outbox.Event) string
	// ClosedWorkflow, on a signal route, is the workflow type started for
	// an event whose target already closed (or, on a route without
	// Workflow, does not exist): a workflow of its own, as a
	// start route's (workflow ID = event ID, input its EventInput, on
	// TaskQueue with the route's search attributes, summary and memo; a
	// second start of it is a duplicate absorbed), which handles what
	// came too late for its target (a webhook for an order whose saga is
	// long done: record it, tell an operator). It also runs for a
	// re-delivery of an event the target did take just before it closed,
	// so it checks (in the target's effects, an inbox) before it acts.
	// Optional: unset, such an event is quarantined.
	ClosedWorkflow string
}

// validate returns what is wrong with the route of event type typ.
func (r Route) validate(typ string) []string {
	var bad []string
	if r.Workflow == "" && r.Signal == "" {
		bad = append(bad, fmt.Sprintf("the route of event type %q names no workflow", typ))
	}
	switch {
	case r.Signal != "" && r.WorkflowID == nil:
		bad = append(bad, fmt.Sprintf("the signal route of event type %q has no WorkflowID: say which workflow each event signals (the order's saga, say)", typ))
	case r.Signal == "" && r.WorkflowID != nil:
		bad = append(bad, fmt.Sprintf("the route of event type %q has a WorkflowID but no Signal: a start route's workflow ID is the event's; set Signal to deliver the event as a signal", typ))
	}
	if r.Signal == "" && r.ClosedWorkflow != "" {
		bad = append(bad, fmt.Sprintf("the route of event type %q has a ClosedWorkflow but no Signal: only a signal route has a target that may have closed", typ))
	}
	return bad
}

// validate returns an error naming every bad route, in event type order.
func (rs Routes) validate() error {
	types := make([]string, 0, len(rs))
	for typ := range rs {
		types = append(types, typ)
	}
	slices.Sort(types)
	var bad []string
	for _, typ := range types {
		bad = append(bad, rs[typ].validate(typ)...)
	}
	if len(bad) > 0 {
		return errors.New("temporalpub: " + strings.Join(bad, "; "))
	}
	return nil
}

// describe is the summary and details of e's start by r (see
// [Route.Describe]).
func (r Route) describe(e outbox.Event) (summary, details string) {
	if r.Describe != nil {
		summary, details = r.Describe(e)
	} else {
		summary = e.Type + " " + e.AggregateType + " " + e.AggregateID
	}
	if e.Replay && summary != "" {
		summary += " (replay)"
	}
	return summary, details
}
