package temporalpub

import (
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/outbox"
)

// Routes maps an event type (outbox.Event.Type) to the [Route] that starts
// its workflow.
type Routes map[string]Route

// Route says which workflow handles an event type, on which task queue and
// with which search attributes, and how to validate its payload before a
// workflow is started for it.
type Route struct {
	// Workflow is the workflow type name. Mandatory.
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
	//		return temporal.NewSearchAttributes(handoff.OrderIDKey.ValueSet(e.AggregateID))
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
	// through the client's data converter (encrypted with the payload codec
	// when there is one), and an operator reads them in every list: never
	// put personal data in them. A workflow keeps them current with
	// workflow.SetCurrentDetails. Optional: defaulted to the summary
	// "EVENT_TYPE AGGREGATE_TYPE AGGREGATE_ID" (what the memo carries
	// anyway) and no details. A replay's summary ends with " (replay)".
	Describe func(outbox.Event) (summary, details string)
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
