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
