// Package outboxbench runs the relay's own claim and mark statements for the
// benchmarks (cmd/bench) and the backlog test (testsuite), which drive them
// without a Relay to measure what the relay itself adds (its goroutines, mark
// batching and bookkeeping) and what a claim costs as the table grows.
//
// It binds the statements of outbox/internal/relaysql, the ones package outbox binds,
// with the arguments a polling relay gives them. The binding is checked
// strictly when the package is initialised, as outbox's is: a placeholder
// added to or renamed in relay.sql without a field here panics at the first
// start of a benchmark or test. Nothing in package outbox knows about this
// package, so no production binary links it.
package outboxbench

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/internal/relaysql"
	"github.com/outflow/outflow/outbox/namedsql"
)

// Querier is what a statement runs on: a *pgxpool.Pool, a *pgx.Conn or a
// pgx.Tx.
type Querier = namedsql.Querier

// ClaimArgs are what the relay's claim takes from its configuration.
type ClaimArgs struct {
	Owner       string
	BatchSize   int
	Lease       time.Duration
	MaxAttempts int
}

// The rows are left to the caller (Rows), so R only documents them.
var (
	qClaim = namedsql.Bind[relaysql.ClaimArgs, namedsql.NoRows](relaysql.Queries, "RelayClaim")
	qMark  = namedsql.Bind[relaysql.EventsArgs, uuid.UUID](relaysql.Queries, "RelayMark")
)

// Claim runs the relay's claim statement on q, as a polling relay outside
// its pipeline does (no CDC narrowing, no events held), and returns its rows,
// one per claimed event, with the columns the relay reads (the event ID
// first). It
// claims for real: run it in a transaction that is rolled back to leave the
// table as it was.
func Claim(ctx context.Context, q Querier, a ClaimArgs) (pgx.Rows, error) {
	return qClaim.Rows(ctx, q, relaysql.ClaimArgs{
		Owner:       a.Owner,
		BatchSize:   a.BatchSize,
		LeaseMS:     a.Lease.Milliseconds(),
		MaxAttempts: a.MaxAttempts,
	})
}

// Mark runs the relay's mark statement for ids claimed by owner on q; its
// rows are the IDs it marked published.
func Mark(ctx context.Context, q Querier, owner string, ids []uuid.UUID) (pgx.Rows, error) {
	return qMark.Rows(ctx, q, relaysql.EventsArgs{Owner: owner, EventIDs: ids})
}
