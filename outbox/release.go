package outbox

import (
	"context"
	"fmt"

	"github.com/google/uuid"
)

// release gives back claims that were never attempted, fenced by the owner:
// a claim another relay took over is not touched. It returns the number of
// events released.
func (r *Relay) release(ctx context.Context, ids []uuid.UUID) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	tag, err := qRelayRelease.exec(ctx, r.pool, relayEventsArgs{Owner: r.cfg.Owner, EventIDs: ids})
	if err != nil {
		return 0, fmt.Errorf("outbox: release %d claims: %w", len(ids), err)
	}
	return tag.RowsAffected(), nil
}
