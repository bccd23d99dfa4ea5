package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// NotifyChannel is the PostgreSQL channel [Enqueue] notifies on commit; relays
// LISTEN on it so commit-to-publish latency is not the poll interval.
const NotifyChannel = "outbox_events"

// Event is one immutable outbox row. The caller fills the aggregate, the
// type, the schema version and the payload; [Enqueue] assigns the rest.
type Event struct {
	// ID never changes across retries and replays; consumers and providers
	// de-duplicate with it. Optional: defaulted to a new UUIDv7 (time-ordered,
	// so inserts stay at the right edge of the primary key index).
	ID uuid.UUID
	// AggregateType names the kind of aggregate, e.g. "order". Mandatory.
	AggregateType string
	// AggregateID identifies the aggregate within its type. Mandatory.
	AggregateID string
	// Sequence is the event's position in its aggregate's stream, starting at
	// 1. Assigned by Enqueue.
	Sequence int64
	// Type is the event type, e.g. "OrderCreated". Mandatory.
	Type string
	// SchemaVersion is the payload's schema version. Mandatory, at least 1:
	// set explicitly so consumers can upcast old payloads.
	SchemaVersion int
	// Payload is the event body as JSON. Mandatory.
	Payload json.RawMessage
	// OccurredAt is the commit-time clock of the enqueuing transaction.
	// Assigned by Enqueue.
	OccurredAt time.Time
	// Replay is set by the relay on an event an operator replayed (see
	// outboxops.Replay): it was published before and is being delivered
	// again. A publisher may then allow what it refuses for a first delivery
	// (the Temporal publisher lets a failed workflow run again). Ignored by
	// Enqueue.
	Replay bool
	// Skipped is set by the relay on an event an operator skipped
	// (outboxops.Skip, SkipLogEvent): what is delivered is its tombstone,
	// in the event's place in its aggregate's lane, and only to a
	// [SkipPublisher] (never to Publish). Ignored by Enqueue.
	Skipped bool
	// TraceContext is the trace the event was written in: the enqueuing
	// caller's propagation headers (W3C traceparent and tracestate, baggage
	// when present), nil when the caller had no span. Enqueue fills it from
	// its context when unset ([CaptureTraceContext]); the relay's publish
	// continues that trace (a replay links to it instead: see
	// RelayConfig.TracerProvider). Keep personal data out of baggage: it is
	// stored with the event.
	TraceContext map[string]string
}

// ErrInvalidEvent is wrapped by every validation error of [Enqueue].
var ErrInvalidEvent = errors.New("outbox: invalid event")

// ErrPayloadTooLarge is wrapped (beside [ErrInvalidEvent]) by an enqueue
// of an event whose payload is larger than the enqueuer's limit
// (EnqueueConfig.MaxPayloadBytes, [MaxPayloadBytesDefault] for [Enqueue]):
// no sink would ever take it, and the relay could only quarantine it. The
// error names the event, its payload's size and the limit. It is returned
// before any statement is sent, so nothing is written and the caller's
// transaction stays usable.
var ErrPayloadTooLarge = errors.New("outbox: the event's payload is larger than the limit")

// MaxPayloadBytesDefault is the default of EnqueueConfig.MaxPayloadBytes,
// and the limit of [Enqueue] and [EnqueueBatch]: 64 MiB, the largest
// payload any sink outflow ships could take, so that the default refuses
// only what no sink ever would. NATS JetStream (natspub) takes a message
// up to the server's max_payload, 1 MiB by default and at most 64 MiB
// however configured (headers included). Temporal (temporalpub) takes far
// less: a start's input up to the namespace's blob limit
// (limit.blobSize.error, 2 MiB by default, the envelope and the payload
// codec's growth included) and no request over its frontend's 4 MiB gRPC
// message limit; it refuses a larger event for good, and the relay
// quarantines it. A service that publishes to Temporal only refuses such
// events at the source with a MaxPayloadBytes under 2 MiB.
const MaxPayloadBytesDefault = 64 << 20

// NewEvent marshals payload and returns an event ready for [Enqueue].
func NewEvent(aggregateType, aggregateID, eventType string, schemaVersion int, payload any) (Event, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return Event{}, fmt.Errorf("%w: marshal %s payload: %v", ErrInvalidEvent, eventType, err)
	}
	return Event{
		AggregateType: aggregateType,
		AggregateID:   aggregateID,
		Type:          eventType,
		SchemaVersion: schemaVersion,
		Payload:       body,
	}, nil
}

func (e *Event) validate() error {
	switch {
	case e.AggregateType == "":
		return fmt.Errorf("%w: AggregateType is empty", ErrInvalidEvent)
	case e.AggregateID == "":
		return fmt.Errorf("%w: AggregateID is empty", ErrInvalidEvent)
	case e.Type == "":
		return fmt.Errorf("%w: Type is empty", ErrInvalidEvent)
	case e.SchemaVersion < 1:
		return fmt.Errorf("%w: %s: SchemaVersion must be set explicitly (1 or more)", ErrInvalidEvent, e.Type)
	case len(e.Payload) == 0 || !json.Valid(e.Payload):
		return fmt.Errorf("%w: %s: Payload is not valid JSON", ErrInvalidEvent, e.Type)
	}
	return nil
}
