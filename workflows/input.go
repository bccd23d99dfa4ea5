package workflows

import (
	"encoding/json"
	"time"
)

// Workflow type names, fixed by CONTRACT.md.
const (
	OrderCreatedWorkflowName   = "OrderCreatedWorkflow"
	OrderCancelledWorkflowName = "OrderCancelledWorkflow"
)

// DefaultTaskQueue is used when OUTFLOW_TASK_QUEUE is unset.
const DefaultTaskQueue = "orders"

// SearchAttributeOrderID is the custom Keyword search attribute every
// workflow sets, so operators find an order's histories with OrderId="...".
const SearchAttributeOrderID = "OrderId"

// EventInput is the single input of every workflow the relay starts: the
// outbox event's envelope, with the payload left as JSON so the workflow can
// upcast older schema versions itself.
type EventInput struct {
	EventID       string          `json:"event_id"`
	EventType     string          `json:"event_type"`
	AggregateType string          `json:"aggregate_type"`
	AggregateID   string          `json:"aggregate_id"`
	Sequence      int64           `json:"aggregate_sequence"`
	SchemaVersion int             `json:"schema_version"`
	OccurredAt    time.Time       `json:"occurred_at"`
	Payload       json.RawMessage `json:"payload"`
}
