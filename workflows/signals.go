package workflows

// SignalCancel is the signal OrderCancelledWorkflow sends to the order's saga
// (workflow ID = the OrderCreated event id) to stop it.
const SignalCancel = "cancel"

// QueryStatus is the query both workflows answer with their current state,
// for operators: `temporal workflow query --type status -w EVENT_ID`.
const QueryStatus = "status"

// CancelRequest is the payload of [SignalCancel].
type CancelRequest struct {
	// CancelEventID is the OrderCancelled event that asks for the stop.
	CancelEventID string `json:"cancel_event_id"`
	Reason        string `json:"reason,omitempty"`
}
