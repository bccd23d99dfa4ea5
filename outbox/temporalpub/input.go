package temporalpub

import (
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/temporalpub/wire"
)

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

// InputOf is the input the publisher gives e's workflow (or sends as e's
// signal): for a workflow test that starts the workflow the way the relay
// would, with an event enqueued (or built with outbox.NewEvent) instead of
// an envelope written by hand. Delivery is [DeliveryReplay] for a replayed
// event, [DeliveryFirst] otherwise (the publisher leaves it "" where it
// cannot tell: a re-delivery older than the namespace retention).
func InputOf(e outbox.Event) EventInput {
	in := EventInput{
		EventID:       e.ID.String(),
		EventType:     e.Type,
		AggregateType: e.AggregateType,
		AggregateID:   e.AggregateID,
		Sequence:      e.Sequence,
		SchemaVersion: e.SchemaVersion,
		OccurredAt:    e.OccurredAt,
		Payload:       e.Payload,
		Delivery:      DeliveryFirst,
	}
	if e.Replay {
		in.Delivery = DeliveryReplay
	}
	return in
}
