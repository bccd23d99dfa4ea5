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
func (r *pollRelay) mark(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var marked []uuid.UUID
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := qRelayMarkAsync.Exec(ctx, tx, namedsql.NoArgs{}); err != nil {
			return err
		}
		var err error
		marked, err = qRelayMark.All(ctx, tx, relaysql.EventsArgs{Owner: r.cfg.Owner, EventIDs: ids})
		if err != nil {
			return err
		}
		// Inside the mark transaction, before COMMIT: a crash here leaves the
		// events unpublished, to be published (and absorbed) again.
		return r.cfg.Failpoints.Inject(ctx, failpoints.RelayBeforeMarkCommit)
	})
	if err != nil {
		return nil, fmt.Errorf("outbox: mark %d events published: %w", len(ids), err)
	}
	return marked, nil
}
