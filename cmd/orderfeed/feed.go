package main

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/natspub/natsconsumer"
)

//go:embed feed.sql
var sqlFiles embed.FS

var (
	queries      = namedsql.MustLoad(sqlFiles, "feed.sql")
	qSchema      = namedsql.Bind[namedsql.NoRows, namedsql.NoRows](queries, "FeedSchema")
	qLast        = namedsql.Bind[orderArgs, int64](queries, "FeedLastSequence")
	qSetSequence = namedsql.Bind[positionArgs, namedsql.NoRows](queries, "FeedSetSequence")
	qCreated     = namedsql.Bind[createdArgs, namedsql.NoRows](queries, "FeedCreated")
	qCancelled   = namedsql.Bind[cancelledArgs, namedsql.NoRows](queries, "FeedCancelled")
)

// statements describes every bound statement, for the test that has the
// database check them.
var statements = []namedsql.Info{qSchema.Info(), qLast.Info(), qSetSequence.Info(), qCreated.Info(), qCancelled.Info()}

type orderArgs struct {
	OrderID string `db:"order_id"`
}

type positionArgs struct {
	OrderID      string `db:"order_id"`
	LastSequence int64  `db:"last_sequence"`
}

type createdArgs struct {
	OrderID      string    `db:"order_id"`
	Amount       *int64    `db:"amount"`
	Currency     *string   `db:"currency"`
	CreatedAt    time.Time `db:"created_at"`
	LastSequence int64     `db:"last_sequence"`
}

type cancelledArgs struct {
	OrderID      string    `db:"order_id"`
	CancelledAt  time.Time `db:"cancelled_at"`
	LastSequence int64     `db:"last_sequence"`
}

// feed is the projection: natsconsumer's Positions and Apply over
// order_feed. Only order events reach it (the consumer filters the
// order subjects).
type feed struct{}

var _ natsconsumer.Positions = feed{}

func (feed) LastApplied(ctx context.Context, tx pgx.Tx, _, orderID string) (int64, error) {
	return qLast.Value(ctx, tx, orderArgs{OrderID: orderID})
}

func (feed) SetApplied(ctx context.Context, tx pgx.Tx, _, orderID string, seq int64) error {
	_, err := qSetSequence.Exec(ctx, tx, positionArgs{OrderID: orderID, LastSequence: seq})
	return err
}

// apply writes OrderCreated and OrderCancelled into the order's row; the
// order's other events only move its position (SetApplied).
func (feed) apply(ctx context.Context, tx pgx.Tx, m natsconsumer.Message) error {
	var err error
	switch m.EventType {
	case orders.EventOrderCreated:
		args := createdArgs{OrderID: m.AggregateID, CreatedAt: m.OccurredAt, LastSequence: m.Sequence}
		if !m.PayloadErased { // a forgotten customer's order keeps its row, without amount and currency
			var p orders.OrderCreated
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				return fmt.Errorf("orderfeed: %s payload of event %s: %w", m.EventType, m.EventID, err)
			}
			args.Amount, args.Currency = &p.Amount, &p.Currency
		}
		_, err = qCreated.Exec(ctx, tx, args)
	case orders.EventOrderCancelled:
		_, err = qCancelled.Exec(ctx, tx, cancelledArgs{OrderID: m.AggregateID, CancelledAt: m.OccurredAt, LastSequence: m.Sequence})
	}
	return err
}
