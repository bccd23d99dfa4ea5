package outbox

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/internal/bench/outboxbench"
)

// cmd/bench runs the relay's claim and mark statements without a Relay, bound
// as the relay binds them, to measure what the relay adds on top of its SQL.
// It reaches them through internal/bench/outboxbench, not through outbox's API:
// applications have no use for them.
func init() {
	outboxbench.Register(outboxbench.Hooks{
		Claim: func(ctx context.Context, q outboxbench.Querier, a outboxbench.ClaimArgs) (pgx.Rows, error) {
			cfg := RelayConfig{BatchSize: a.BatchSize, Lease: a.Lease, MaxAttempts: a.MaxAttempts}
			return qRelayClaim.rows(ctx, q, claimArgs(a.Owner, &cfg))
		},
		Mark: func(ctx context.Context, q outboxbench.Querier, owner string, ids []uuid.UUID) (pgx.Rows, error) {
			return qRelayMark.rows(ctx, q, relayEventsArgs{Owner: owner, EventIDs: ids})
		},
	})
}
