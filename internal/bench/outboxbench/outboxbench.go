// Package outboxbench runs the relay's own claim and mark statements for the
// benchmarks (cmd/bench) and the backlog test (testsuite), which drive them
// without a Relay to measure what the relay itself adds (its goroutines, mark
// batching and bookkeeping) and what a claim costs as the table grows.
//
// It binds the statements of internal/relaysql, the ones package outbox binds,
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

	"github.com/outflow/outflow/internal/namedsql"
	"github.com/outflow/outflow/internal/relaysql"
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

// claimArgs are RelayClaim's placeholders as a polling relay outside its
// pipeline binds them (outbox's claimArgs): no CDC narrowing (min_age_ms 0,
// handed_off NULL) and no events held.
type claimArgs struct {
	Owner       string      `db:"owner"`
	BatchSize   int         `db:"batch_size"`
	LeaseMS     int64       `db:"lease_ms"`
	MaxAttempts int         `db:"max_attempts"`
	MinAgeMS    int64       `db:"min_age_ms"`
	HandedOff   []uuid.UUID `db:"handed_off"`
	Held        []uuid.UUID `db:"held"`
}

type eventsArgs struct {
	Owner    string      `db:"owner"`
	EventIDs []uuid.UUID `db:"event_ids"`
}

// The rows are left to the caller (Rows), so R only documents them.
var (
	qClaim = namedsql.Bind[claimArgs, namedsql.NoRows](relaysql.Queries, "RelayClaim")
	qMark  = namedsql.Bind[eventsArgs, uuid.UUID](relaysql.Queries, "RelayMark")
)

// Claim runs the relay's claim statement on q and returns its rows, one per
// claimed event, with the columns the relay reads (the event ID first). It
// claims for real: run it in a transaction that is rolled back to leave the
// table as it was.
func Claim(ctx context.Context, q Querier, a ClaimArgs) (pgx.Rows, error) {
	return qClaim.Rows(ctx, q, claimArgs{
		Owner:       a.Owner,
		BatchSize:   a.BatchSize,
		LeaseMS:     a.Lease.Milliseconds(),
		MaxAttempts: a.MaxAttempts,
	})
}

// Mark runs the relay's mark statement for ids claimed by owner on q; its
// rows are the IDs it marked published.
func Mark(ctx context.Context, q Querier, owner string, ids []uuid.UUID) (pgx.Rows, error) {
	return qMark.Rows(ctx, q, eventsArgs{Owner: owner, EventIDs: ids})
}
