package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/propagation"

	"github.com/outflow/outflow/outbox/namedsql"
)

// Enqueue writes events as immutable outbox rows inside tx, the caller's own
// business transaction, and returns them with their IDs, sequences and
// timestamps filled in. Nothing is visible to relays unless tx commits; when
// it does, relays listening on [NotifyChannel] are woken.
//
// Events of one aggregate get consecutive sequence numbers in the order
// given. Aggregates are locked in a stable order (type, then ID) so two
// transactions touching the same aggregates cannot deadlock on each other.
// All aggregates are written in one round trip.
//
// There is deliberately no form of Enqueue that opens its own transaction: an
// event written outside the business change it describes is exactly the dual
// write the outbox exists to prevent.
//
// A payload larger than [MaxPayloadBytesDefault] is refused with
// [ErrPayloadTooLarge] before anything is sent (an [Enqueuer] sets its own
// limit).
//
// An event whose TraceContext is unset gets ctx's trace context (through
// otel's global propagator; an [Enqueuer]'s own when configured), so the
// relay's publish continues the caller's trace: nothing when ctx has no
// valid span.
func Enqueue(ctx context.Context, tx pgx.Tx, events ...Event) ([]Event, error) {
	return enqueueTo(ctx, tx, nil, qEnqueueAggregate, MaxPayloadBytesDefault, events)
}

// EnqueueTx is [Enqueue] for the common case, a caller that needs nothing
// back: it writes events inside tx, the caller's business transaction, with
// the same rules, and returns only the error.
func EnqueueTx(ctx context.Context, tx pgx.Tx, events ...Event) error {
	_, err := Enqueue(ctx, tx, events...)
	return err
}

// enqueueTo is Enqueue through stmt, EnqueueAggregate (outbox_events) or
// EnqueueLogAggregate (outbox_log), refusing payloads over maxPayload bytes.
func enqueueTo(ctx context.Context, tx pgx.Tx, prop propagation.TextMapPropagator, stmt enqueueStmt, maxPayload int, events []Event) ([]Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	events = captureTraces(ctx, prop, events)
	b := &pgx.Batch{}
	q, err := enqueueBatchTo(b, stmt, maxPayload, events)
	if err != nil {
		return nil, err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("outbox: enqueue: %w", explainLogNoRange(err))
	}
	return q.Events()
}

// Queued is the result of [EnqueueBatch], complete once the batch's results
// have been read.
type Queued struct {
	events  []Event
	pending int
	err     error
}

// Events returns the enqueued events with their IDs, sequences and
// timestamps, or the error that writing them met. It is valid after the
// caller's batch was sent and its results read (BatchResults.Close).
func (q *Queued) Events() ([]Event, error) {
	if q.err != nil {
		return nil, q.err
	}
	if q.pending != 0 {
		return nil, errors.New("outbox: EnqueueBatch results read before the batch was sent and closed")
	}
	return q.events, nil
}

// EnqueueBatch is [Enqueue] for callers that pipeline: it validates events
// and queues their statements onto b, which the caller sends inside its own
// transaction together with its business statements, so the outbox costs no
// extra round trip. The batch must be sent with tx.SendBatch of the business
// transaction; the events are known once its results are closed. An event
// it refuses (invalid, or its payload over [MaxPayloadBytesDefault]: see
// [ErrPayloadTooLarge]) queues nothing onto b.
func EnqueueBatch(b *pgx.Batch, events ...Event) (*Queued, error) {
	return enqueueBatchTo(b, qEnqueueAggregate, MaxPayloadBytesDefault, events)
}

// enqueueStmt is the statement that writes one aggregate's events.
type enqueueStmt = namedsql.Stmt[enqueueAggregateArgs, enqueuedRow]

// enqueueBatchTo is EnqueueBatch through stmt, refusing payloads over
// maxPayload bytes.
func enqueueBatchTo(b *pgx.Batch, stmt enqueueStmt, maxPayload int, events []Event) (*Queued, error) {
	out := slices.Clone(events)
	lanes, err := prepare(out, maxPayload)
	if err != nil {
		return nil, err
	}
	q := &Queued{events: out, pending: len(lanes)}
	for _, l := range lanes {
		a := enqueueAggregateArgs{
			AggregateType:  l.aggType,
			AggregateID:    l.aggID,
			EventIDs:       make([]uuid.UUID, len(l.idx)),
			EventTypes:     make([]string, len(l.idx)),
			SchemaVersions: make([]int32, len(l.idx)),
			Payloads:       make([]string, len(l.idx)),
		}
		if a.TraceContexts, err = traceContextsArg(out, l.idx); err != nil {
			return nil, fmt.Errorf("outbox: enqueue %s/%s: trace context: %w", l.aggType, l.aggID, err)
		}
		for j, i := range l.idx {
			a.EventIDs[j], a.EventTypes[j], a.SchemaVersions[j], a.Payloads[j] = out[i].ID, out[i].Type, int32(out[i].SchemaVersion), string(out[i].Payload)
		}
		stmt.Queue(b, a).Query(func(rows pgx.Rows) error {
			if err := q.scanLane(stmt, rows, l); err != nil {
				q.err = fmt.Errorf("outbox: enqueue %s/%s: %w", l.aggType, l.aggID, explainLogNoRange(err))
				return q.err
			}
			q.pending--
			return nil
		})
	}
	return q, nil
}

func (q *Queued) scanLane(stmt enqueueStmt, rows pgx.Rows, l *enqueueLane) error {
	written, err := stmt.Collect(rows)
	switch {
	case err != nil:
		return err
	case len(written) > len(l.idx):
		return errors.New("more rows returned than events written")
	case len(written) < len(l.idx):
		return fmt.Errorf("%d of %d events written", len(written), len(l.idx))
	}
	for j, w := range written {
		e := &q.events[l.idx[j]]
		if w.EventID != e.ID {
			return errors.New("rows returned out of order")
		}
		e.Sequence, e.OccurredAt = w.AggregateSequence, w.OccurredAt
	}
	return nil
}

// enqueueLane is the events of one aggregate within an enqueue, by index.
type enqueueLane struct {
	aggType, aggID string
	idx            []int
}

// prepare validates events (payloads up to maxPayload bytes), assigns
// missing IDs, and groups them into lanes sorted by aggregate, the order in
// which the aggregates are locked.
func prepare(events []Event, maxPayload int) ([]*enqueueLane, error) {
	var lanes []*enqueueLane
	byKey := map[[2]string]*enqueueLane{}
	for i := range events {
		e := &events[i]
		if err := e.validate(); err != nil {
			return nil, err
		}
		if len(e.Payload) > maxPayload {
			return nil, fmt.Errorf("%w: %w: event %d of the call (%s of %s %s): its payload is %d bytes, the limit %d bytes "+
				"(EnqueueConfig.MaxPayloadBytes, default %d: more than any sink takes); nothing was written",
				ErrInvalidEvent, ErrPayloadTooLarge, i, e.Type, e.AggregateType, e.AggregateID, len(e.Payload), maxPayload, MaxPayloadBytesDefault)
		}
		if e.ID == uuid.Nil {
			id, err := uuid.NewV7()
			if err != nil {
				return nil, fmt.Errorf("outbox: new event id: %w", err)
			}
			e.ID = id
		}
		key := [2]string{e.AggregateType, e.AggregateID}
		l := byKey[key]
		if l == nil {
			l = &enqueueLane{aggType: e.AggregateType, aggID: e.AggregateID}
			byKey[key] = l
			lanes = append(lanes, l)
		}
		l.idx = append(l.idx, i)
	}
	slices.SortFunc(lanes, func(a, b *enqueueLane) int {
		if c := strings.Compare(a.aggType, b.aggType); c != 0 {
			return c
		}
		return strings.Compare(a.aggID, b.aggID)
	})
	return lanes, nil
}
