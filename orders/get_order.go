package orders

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// GetOrder returns the order with its events in sequence order, or
// ErrOrderNotFound. The two reads are not one snapshot: an event published
// between them shows as published, which is only ever more recent.
func GetOrder(ctx context.Context, db DB, id uuid.UUID) (Order, error) {
	rows, err := db.Query(ctx, queries.Get("GetOrder"), id)
	if err != nil {
		return Order{}, fmt.Errorf("orders: get order %s: %w", id, err)
	}
	o, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Order])
	if errors.Is(err, pgx.ErrNoRows) {
		return Order{}, ErrOrderNotFound
	}
	if err != nil {
		return Order{}, fmt.Errorf("orders: get order %s: %w", id, err)
	}
	o.CancelRequested = o.CancelEventID != nil
	rows, err = db.Query(ctx, queries.Get("ListOrderEvents"), AggregateType, id.String())
	if err != nil {
		return Order{}, fmt.Errorf("orders: list events of order %s: %w", id, err)
	}
	o.Events, err = pgx.CollectRows(rows, pgx.RowToStructByName[OrderEvent])
	if err != nil {
		return Order{}, fmt.Errorf("orders: list events of order %s: %w", id, err)
	}
	for i := range o.Events {
		if e := &o.Events[i]; e.PublishedAt != nil {
			wf := e.EventID.String()
			e.WorkflowID = &wf
		}
	}
	return o, nil
}
