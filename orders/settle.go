package orders

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// SettleSkippedTx records, inside the transaction that skips an outbox event
// (outboxops.SkipTx), that the order's event at sequence will never be applied.
// The order projection applies an order's events strictly in sequence, so
// without this a skipped event would hold every later one (a cancel, say)
// back forever. The sequence is kept in orders.skipped_sequences, and
// applied_sequence moves past it at once if it directly follows; otherwise
// the projection moves past it when the events before it have applied.
//
// It does nothing for an aggregate type other than [AggregateType]. An order
// event whose order does not exist is an error wrapping [ErrOrderNotFound]:
// the caller's transaction must roll back, skip included, rather than leave
// the skip unaccounted for. The order row stays locked until tx ends.
func SettleSkippedTx(ctx context.Context, tx pgx.Tx, aggregateType, aggregateID string, sequence int64) error {
	if aggregateType != AggregateType {
		return nil
	}
	id, err := uuid.Parse(aggregateID)
	if err != nil {
		return fmt.Errorf("%w: the skipped event's aggregate id %q is not an order id", ErrOrderNotFound, aggregateID)
	}
	if sequence <= 0 {
		return fmt.Errorf("orders: settle skipped event of order %s: sequence %d is not an aggregate sequence", id, sequence)
	}
	tag, err := qSettleSkipped.Exec(ctx, tx, settleSkippedArgs{ID: id, Sequence: sequence})
	if err != nil {
		return fmt.Errorf("orders: settle skipped sequence %d of order %s: %w", sequence, id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: order %s of the skipped event (sequence %d)", ErrOrderNotFound, id, sequence)
	}
	return nil
}
