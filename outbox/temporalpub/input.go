package temporalpub

import "github.com/outflow/outflow/outbox/temporalpub/wire"

// EventInput is the single input of every workflow the publisher starts,
// and the payload of every signal a signal route sends: the outbox event's
// envelope ([wire.EventInput], where it is defined so that a workflow's
// contract names it without linking the Temporal SDK).
type EventInput = wire.EventInput

// Delivery kinds of [EventInput.Delivery], also the memo key "delivery"
// ([wire.DeliveryFirst], [wire.DeliveryReplay]).
const (
	DeliveryFirst  = wire.DeliveryFirst
	DeliveryReplay = wire.DeliveryReplay
)
