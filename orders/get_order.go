package orders

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox"
)

// GetOrder returns the order with its events in sequence order (those
// retention cleanup has not deleted, read through [outbox.AggregateEvents]),
// or ErrOrderNotFound. The two reads are not one snapshot: an event
// published between them shows as published, which is only ever more
// recent.
func GetOrder(ctx context.Context, db DB, id uuid.UUID) (Order, error) {
	o, err := qGetOrder.One(ctx, db, orderIDArgs{ID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return Order{}, ErrOrderNotFound
	}
	if err != nil {
		return Order{}, fmt.Errorf("orders: get order %s: %w", id, err)
	}
	o.CancelRequested = o.CancelEventID != nil
	events, err := outbox.AggregateEvents(ctx, db, AggregateType, id.String())
	if err != nil {
		return Order{}, fmt.Errorf("orders: list events of order %s: %w", id, err)
	}
	o.Events = make([]OrderEvent, 0, len(events))
	for _, e := range events {
		oe := OrderEvent{EventID: e.ID, EventType: e.Type, AggregateSequence: e.Sequence,
			OccurredAt: e.OccurredAt, PublishedAt: e.PublishedAt}
		if e.PublishedAt != nil {
			wf := e.ID.String()
			oe.WorkflowID = &wf
		}
		o.Events = append(o.Events, oe)
	}
	return o, nil
}
