// Package outboxbench reaches the relay's own statements for cmd/bench, which
// drives them without a Relay to measure what the relay itself adds (its
// goroutines, mark batching and bookkeeping) and what a claim costs as the
// table grows. Applications have no use for it, so it is not part of package
// outbox's API: outbox fills it in when it is initialised, and the module's
// internal directory keeps it from everyone but this repository.
package outboxbench

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Querier is what a statement runs on: a *pgxpool.Pool, a *pgx.Conn or a
// pgx.Tx.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ClaimArgs are what the relay's claim takes from its configuration.
type ClaimArgs struct {
	Owner       string
	BatchSize   int
	Lease       time.Duration
	MaxAttempts int
}

// Hooks are the relay's statements, bound to their arguments exactly as the
// relay binds them.
type Hooks struct {
	// Claim sends RelayClaim (outbox/relay.sql). It claims for real: run it
	// in a transaction that is rolled back to leave the table as it was.
	Claim func(ctx context.Context, q Querier, a ClaimArgs) (pgx.Rows, error)
	// Mark sends RelayMark for ids claimed by owner; its rows are the IDs it
	// marked published.
	Mark func(ctx context.Context, q Querier, owner string, ids []uuid.UUID) (pgx.Rows, error)
}

var hooks Hooks

// Register is called by package outbox when it is initialised.
func Register(h Hooks) { hooks = h }

// Claim runs the relay's claim statement on q and returns its rows, one per
// claimed event, with the columns the relay reads (the event ID first).
func Claim(ctx context.Context, q Querier, a ClaimArgs) (pgx.Rows, error) {
	return registered().Claim(ctx, q, a)
}

// Mark runs the relay's mark statement on q and returns the IDs it marked.
func Mark(ctx context.Context, q Querier, owner string, ids []uuid.UUID) (pgx.Rows, error) {
	return registered().Mark(ctx, q, owner, ids)
}

func registered() Hooks {
	if hooks.Claim == nil {
		panic("outboxbench: package outbox registers the hooks when it is initialised; import it")
	}
	return hooks
}
