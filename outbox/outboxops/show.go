package outboxops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox"
)

// EventRow is every column of one event's row as a JSON object, in the
// table's column order, so that a column a later schema adds shows up
// unasked (payload as JSON, times as RFC 3339, NULL as null): what
// `outboxctl show` prints. An unknown id is [outbox.ErrEventNotFound].
func EventRow(ctx context.Context, db DB, id uuid.UUID) (json.RawMessage, error) {
	raw, err := qOpsEventRow.Value(ctx, db, eventIDArgs{EventID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", outbox.ErrEventNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("outbox: read event %s: %w", id, err)
	}
	return json.RawMessage(raw), nil
}

// EventDetail is one event whole, as [Show] finds it.
type EventDetail struct {
	// Row is every column of the event's row as a JSON object in the
	// table's column order ([EventRow]); for an event of the log, its
	// LogEvent as JSON (its key, partition and hold).
	Row json.RawMessage
	// Source is [SourceLog] for an event of the log, empty for one of
	// outbox_events.
	Source string
	// State is the event's state, as [List] derives it; empty when it
	// could not be derived (StateError says why).
	State      EventState
	StateError string
}

// showStateBound is the most events of its aggregate [Show] reads to
// derive an event's state.
const showStateBound = 10000

// Show finds the event id in outbox_events or, failing that, in the log,
// and returns it whole with its state. An ID in neither is an error
// wrapping outbox.ErrEventNotFound.
func Show(ctx context.Context, db DB, id uuid.UUID) (EventDetail, error) {
	raw, err := EventRow(ctx, db, id)
	if errors.Is(err, outbox.ErrEventNotFound) {
		e, lerr := findLogEvent(ctx, db, id, err)
		if lerr != nil {
			return EventDetail{}, lerr
		}
		if raw, err = json.Marshal(e); err != nil {
			return EventDetail{}, err
		}
		return EventDetail{Row: raw, Source: SourceLog, State: EventState(e.State())}, nil
	}
	if err != nil {
		return EventDetail{}, err
	}
	d := EventDetail{Row: raw}
	// The state, the way List derives it: over the event's aggregate,
	// which holds it.
	var key struct {
		AggregateType string `json:"aggregate_type"`
		AggregateID   string `json:"aggregate_id"`
	}
	if err := json.Unmarshal(raw, &key); err != nil {
		return EventDetail{}, fmt.Errorf("outbox: read event %s: %w", id, err)
	}
	events, err := List(ctx, db, ListOptions{AggregateType: key.AggregateType, AggregateID: key.AggregateID, Limit: showStateBound})
	if err != nil {
		d.StateError = fmt.Sprintf("deriving the state: %v", err)
		return d, nil
	}
	for _, e := range events {
		if e.ID == id {
			d.State = e.State
			return d, nil
		}
	}
	d.StateError = fmt.Sprintf("the state is not derived: aggregate %s/%s has more than %d events", key.AggregateType, key.AggregateID, showStateBound)
	return d, nil
}
