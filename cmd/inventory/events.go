package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// The outbox names of the inventory's events. Their aggregate is the order:
// an order's events are relayed in the order they committed.
const (
	AggregateType = "inventory_reservation"
	EventReserved = "StockReserved"
	EventRejected = "StockRejected"
	EventReleased = "StockReleased"
	// SchemaVersion is the version of [Outcome] as an event payload.
	SchemaVersion = 1
)

// Outcomes of a reserve or release: [Outcome.Outcome].
const (
	OutcomeReserved        = "reserved"
	OutcomeRejected        = "rejected"
	OutcomeReleased        = "released"
	OutcomeAlreadyReleased = "already_released"
)

// Reasons of a rejection or a release: [Outcome.Reason].
const (
	// ReasonInsufficientStock: a SKU has less available than requested
	// (Shortages says which); nothing was reserved.
	ReasonInsufficientStock = "insufficient_stock"
	// ReasonOrderReleased: the order's reservation was released (or a
	// release came first); it is never reserved again.
	ReasonOrderReleased = "order_released"
	// ReasonNothingReserved: a release found nothing held for the order and
	// left a tombstone, so a reserve arriving later is rejected.
	ReasonNothingReserved = "nothing_reserved"
)

// Item is a quantity of one SKU.
type Item struct {
	SKU      string `json:"sku"`
	Quantity int64  `json:"quantity"`
}

// Shortage is a SKU a rejected reservation asked more of than is available.
type Shortage struct {
	SKU       string `json:"sku"`
	Requested int64  `json:"requested"`
	Available int64  `json:"available"`
}

// Outcome is what a reserve or release did: the HTTP answer's body (with
// the event's ID) and, schema version 1, the payload of the event it wrote
// (StockReserved, StockRejected or StockReleased), which the saga decodes
// from temporalpub.EventInput.Payload.
type Outcome struct {
	OrderID string `json:"order_id"`
	// WorkflowID is the saga the event signals: the reserve request's
	// workflow_id (a release's, when it found no reservation).
	WorkflowID string `json:"workflow_id"`
	// Outcome is reserved, rejected, released or (an answer only, never an
	// event) already_released.
	Outcome string `json:"outcome"`
	// Items are the SKUs and quantities reserved (reserved), requested
	// (rejected) or given back (released; empty when nothing was held).
	Items []Item `json:"items"`
	// Reason says why a reserve was rejected or a release held nothing:
	// insufficient_stock, order_released or nothing_reserved.
	Reason string `json:"reason,omitempty"`
	// Shortages are the SKUs short, on an insufficient_stock rejection.
	Shortages []Shortage `json:"shortages,omitempty"`
	// IdempotencyKey is the request's key.
	IdempotencyKey string `json:"idempotency_key"`
}

// eventType is the event of an outcome; already_released writes none.
func (o Outcome) eventType() string {
	switch o.Outcome {
	case OutcomeReserved:
		return EventReserved
	case OutcomeRejected:
		return EventRejected
	case OutcomeReleased:
		return EventReleased
	}
	return ""
}

// DefaultSignal is the signal name the inventory's events are delivered as
// when [RouteConfig.Signal] is empty.
const DefaultSignal = "inventory-event"

// RouteConfig says where the inventory's events go.
type RouteConfig struct {
	// Signal is the signal name the saga receives the events on (through
	// eventsignal.New with temporalpub.EventInput). Optional: defaulted to
	// [DefaultSignal].
	Signal string
	// Workflow, when set, is the workflow type Signal-With-Start starts
	// when the event's workflow does not exist yet, with no input. Optional:
	// unset, the events are only signalled, never start a workflow, and an
	// event whose saga does not exist (Temporal forgot it behind the
	// namespace retention) is handled as one whose saga closed. A saga
	// that asked for the reservation already runs: set it only for a
	// workflow that can begin from an inventory event alone.
	Workflow string
	// TaskQueue is the task queue of the workflows started for the events
	// (Workflow, ClosedWorkflow). Optional: defaulted to the publisher's.
	TaskQueue string
	// ClosedWorkflow, when set, is started (workflow ID = event ID, input the
	// EventInput) for an event whose saga already closed (or does not exist,
	// without Workflow); unset, such an event is quarantined for an operator
	// (temporalpub.Route.ClosedWorkflow).
	ClosedWorkflow string
}

// Routes returns the signal routes of the three events: each is delivered
// as the signal cfg.Signal to the workflow its payload's workflow_id names
// (with Signal-With-Start when cfg.Workflow is set), in the order of the
// order's events.
func Routes(cfg RouteConfig) temporalpub.Routes {
	if cfg.Signal == "" {
		cfg.Signal = DefaultSignal
	}
	route := temporalpub.Route{
		Workflow:       cfg.Workflow,
		TaskQueue:      cfg.TaskQueue,
		Signal:         cfg.Signal,
		WorkflowID:     signalTarget,
		ClosedWorkflow: cfg.ClosedWorkflow,
		Validate:       ValidatePayload,
		Describe: func(e outbox.Event) (string, string) {
			return e.Type + " for order " + e.AggregateID, ""
		},
	}
	return temporalpub.Routes{EventReserved: route, EventRejected: route, EventReleased: route}
}

// signalTarget is the saga's workflow ID the event carries; "" (the relay
// quarantines the event) when the payload has none.
func signalTarget(e outbox.Event) string {
	var o Outcome
	if json.Unmarshal(e.Payload, &o) != nil {
		return ""
	}
	return o.WorkflowID
}

// ValidatePayload rejects a payload no saga could use: an unknown schema
// version, or one without order, workflow or outcome.
func ValidatePayload(schemaVersion int, payload []byte) error {
	if schemaVersion != SchemaVersion {
		return fmt.Errorf("inventory event v%d is unknown; this build reads v%d", schemaVersion, SchemaVersion)
	}
	var o Outcome
	if err := json.Unmarshal(payload, &o); err != nil {
		return err
	}
	if o.OrderID == "" || o.WorkflowID == "" || o.eventType() == "" {
		return errors.New("an inventory event needs order_id, workflow_id and an outcome of reserved, rejected or released")
	}
	return nil
}
