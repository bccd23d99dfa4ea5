package outbox

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/internal/relaysql"
	"github.com/outflow/outflow/outbox/namedsql"
)

// mark records acknowledged events as published in one statement and one
// transaction, fenced by the owner: rows whose lease another relay took over
// are left alone. It returns the IDs it marked.
//
// The transaction costs two round trips: BEGIN, RelayMarkAsync and RelayMark
// pipelined in the first, COMMIT in the second, where BEGIN and the SET
// took one each before. A relay in a backlog marks every BacklogMarkDelay,
// a dozen or two events at a time, so each round trip spared is CPU spared
// in its process and its backend.
func (r *pollRelay) mark(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	fail := func(err error) ([]uuid.UUID, error) {
		return nil, fmt.Errorf("outbox: mark %d events published: %w", len(ids), err)
	}
	conn, err := r.pool.Acquire(ctx)
	if err != nil {
		return fail(err)
	}
	// A connection an error left inside the transaction is closed rather
	// than reused (pgxpool checks), which rolls the mark back.
	defer conn.Release()
	var marked []uuid.UUID
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	qRelayMarkAsync.Queue(b, namedsql.NoArgs{})
	qRelayMark.Queue(b, relaysql.EventsArgs{Owner: r.cfg.Owner, EventIDs: ids}).Query(func(rows pgx.Rows) error {
		var err error
		marked, err = qRelayMark.Collect(rows)
		return err
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return fail(err)
	}
	// Inside the mark transaction, before COMMIT: a crash here leaves the
	// events unpublished, to be published (and absorbed) again.
	if err := r.cfg.Failpoints.Inject(ctx, failpoints.RelayBeforeMarkCommit); err != nil {
		if _, rerr := conn.Exec(ctx, "ROLLBACK"); rerr != nil {
			return fail(fmt.Errorf("%w (and its rollback: %w)", err, rerr))
		}
		return fail(err)
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		return fail(err)
	}
	return marked, nil
}
