// Package wire is what the publisher (package temporalpub) sends a workflow:
// the [EventInput] envelope and its delivery kinds. It imports only the
// standard library, so a workflow's contract (outflow's handoff, or a
// service's own) can name the input without linking the Temporal SDK;
// temporalpub's EventInput is this type.
package wire

import (
	"encoding/json"
	"time"
)

// EventInput is the single input of every workflow the publisher starts,
// and the payload of every signal a signal route sends: the outbox event's
// envelope, with the payload left as JSON so that the
// workflow decodes (and upcasts, by SchemaVersion) its own event types. A
// workflow takes it as its one argument:
//
//	func InvoiceWorkflow(ctx workflow.Context, in temporalpub.EventInput) error
//
// (temporalpub.EventInput is an alias of this type).
//
// It is recorded in every workflow history, so it changes only compatibly:
// fields are added, never renamed.
type EventInput struct {
	// EventID is the outbox event's ID, also the workflow ID of a start:
	// derive idempotency keys from it, record it in an inbox, and
	// deduplicate signals by it (package eventsignal).
	EventID       string          `json:"event_id"`
	EventType     string          `json:"event_type"`
	AggregateType string          `json:"aggregate_type"`
	AggregateID   string          `json:"aggregate_id"`
	Sequence      int64           `json:"aggregate_sequence"`
	SchemaVersion int             `json:"schema_version"`
	OccurredAt    time.Time       `json:"occurred_at"`
	Payload       json.RawMessage `json:"payload"`
	// Delivery says what the relay knows about earlier runs of this event:
	// [DeliveryFirst], [DeliveryReplay] or "" (unknown: an older relay, or a
	// re-delivery older than the namespace retention, behind which Temporal
	// may have forgotten an earlier run). A workflow trusts an idempotency
	// key's lifetime from its own start only on a first delivery.
	Delivery string `json:"delivery,omitempty"`
}

// DedupKey is the event's ID: what makes two deliveries of it the same
// event to an eventsignal.Receiver (the workflow side of a signal route).
func (in EventInput) DedupKey() string { return in.EventID }

// Delivery kinds of [EventInput.Delivery], also the memo key "delivery".
const (
	// DeliveryFirst: no earlier run of this event can exist. The relay
	// starts it with REJECT_DUPLICATE and the event is younger than the
	// namespace retention, so Temporal still remembers any earlier run and
	// would have refused this start.
	DeliveryFirst = "first"
	// DeliveryReplay: an operator's replay (ALLOW_DUPLICATE_FAILED_ONLY);
	// an earlier run failed, was terminated or cancelled, maybe after it
	// had effects.
	DeliveryReplay = "replay"
)
