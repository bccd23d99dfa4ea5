package outboxops

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outflow/outflow/outbox"
)

// DB is what the operator's functions ([Status], [List], [Retry],
// [RetryQuarantined], [Skip], [Replay], [Cleanup]) need from a database
// handle. *pgxpool.Pool and *pgx.Conn satisfy it, and so does pgx.Tx (Begin
// then opens a savepoint, so the function joins the caller's transaction).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ErrEventState is wrapped by the errors of [Retry] and [Skip] when the event
// is in a state the operation does not apply to; the message names the state
// and what to do instead.
var ErrEventState = errors.New("outbox: the event's state does not allow this")

// lockEvent row-locks one event in tx and returns it.
func lockEvent(ctx context.Context, tx pgx.Tx, id uuid.UUID) (EventInfo, error) {
	row, err := qOpsLockEvent.One(ctx, tx, eventIDArgs{EventID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return EventInfo{}, fmt.Errorf("%w: %s (check the ID with `outboxctl list`; an event published longer ago than the retention is deleted)", outbox.ErrEventNotFound, id)
	}
	if err != nil {
		return EventInfo{}, err
	}
	return row.eventInfo(), nil
}

// inTx runs fn in a transaction of db: a new one on a pool or connection, a
// savepoint on a pgx.Tx.
func inTx(ctx context.Context, db DB, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db, fn)
}

// ErrEventNotFound is wrapped by the errors of every function here for an
// event ID that neither outbox_events nor the log has (never written, or
// deleted by retention). It is outbox.ErrEventNotFound, named here so an
// operator's tool needs this package alone.
var ErrEventNotFound = outbox.ErrEventNotFound
