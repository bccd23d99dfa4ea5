package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// LookupDB is what [EventSequence], [AggregateEvents] and [Slot] need from a
// database handle: they only read. *pgxpool.Pool, *pgx.Conn and pgx.Tx
// satisfy it, and so does a caller's narrower interface (such as orders.DB)
// that has Query.
type LookupDB interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ErrEventNotFound is wrapped by the errors of [EventSequence], and of the
// operator's commands in package outboxops, for an event ID no outbox row
// has (never written, or deleted by retention cleanup).
var ErrEventNotFound = errors.New("outbox: no outbox event has this ID")

// AggregateEvent is one outbox event of an aggregate and whether it has been
// published, as [AggregateEvents] reports it.
type AggregateEvent struct {
	ID       uuid.UUID `db:"event_id"`
	Type     string    `db:"event_type"`
	Sequence int64     `db:"aggregate_sequence"`
	// OccurredAt is when the event was enqueued.
	OccurredAt time.Time `db:"occurred_at"`
	// PublishedAt is when the publisher acknowledged the event; nil while it
	// is not published.
	PublishedAt *time.Time `db:"published_at"`
}

// EventSequence returns the aggregate sequence of the outbox event eventID,
// or an error wrapping [ErrEventNotFound] when no outbox row has that ID
// (never written, or deleted by retention cleanup). It reads in one
// statement of its own: run in a READ COMMITTED transaction after waiting
// for a row lock, it sees the event the lock's holder committed meanwhile.
func EventSequence(ctx context.Context, db LookupDB, eventID uuid.UUID) (int64, error) {
	seq, err := qLookupEventSequence.One(ctx, db, eventIDArgs{EventID: eventID})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: %s", ErrEventNotFound, eventID)
	}
	if err != nil {
		return 0, fmt.Errorf("outbox: read the sequence of event %s: %w", eventID, err)
	}
	return seq, nil
}

// AggregateEvents returns the outbox events of one aggregate still on file,
// in outbox_events and in the log source's outbox_log, in sequence order;
// none (an empty, non-nil slice) when it has none. A log event's
// PublishedAt is set once its partition's cursor passed it outside a hold,
// to the time the cursor last moved (the log keeps no publish time per
// event, so that time is approximate).
// Retention cleanup deletes published events, so the list may start after
// sequence 1 or be empty for an aggregate that had events.
func AggregateEvents(ctx context.Context, db LookupDB, aggregateType, aggregateID string) ([]AggregateEvent, error) {
	events, err := qLookupAggregateEvents.All(ctx, db, aggregateArgs{AggregateType: aggregateType, AggregateID: aggregateID})
	if err != nil {
		return nil, fmt.Errorf("outbox: list the events of %s %s: %w", aggregateType, aggregateID, err)
	}
	return events, nil
}
