package main

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/namedsql"
)

// Event is one order event as every contender carries it: the bench knows
// its order and its place in the order's sequence, and the sink reads both
// back from what the contender delivers.
type Event struct {
	ID      uuid.UUID
	OrderID string
	// Seq is the event's position in its order's stream, from 1.
	Seq int64
	// Payload is an OrderCreated v1 body, so the Temporal sink can start the
	// same workflow for every contender.
	Payload json.RawMessage
}

// Sink receives delivered events. It is called concurrently, as each
// contender's consumer calls its handlers; an error asks for a redelivery.
type Sink interface {
	Deliver(ctx context.Context, e Event) error
}

// Profile is how a contender is configured.
type Profile int

const (
	// Default is the contender as its documentation's getting-started shows it.
	Default Profile = iota
	// Tuned changes only the settings the contender documents for throughput
	// or latency (see each contender's Settings).
	Tuned
)

func (p Profile) String() string {
	if p == Tuned {
		return "tuned"
	}
	return "default"
}

// Contender is one way of doing the outbox's job. Adding one is one file
// implementing this and one entry in contenders.
type Contender interface {
	// Name prefixes the contender's figures ("outflow", "river", ...).
	Name() string
	// Install creates the contender's tables in a fresh database that already
	// has outflow's schema (the orders table every contender writes).
	Install(ctx context.Context, pool *pgxpool.Pool) error
	// Enqueue writes events in the caller's transaction tx, as a producer
	// configured with p would. order holds the caller's statements queued so
	// far (the order insert, or nothing); the contender sends them, riding
	// along in the same round trip if its API allows, and reads their
	// results before it returns.
	Enqueue(ctx context.Context, tx pgx.Tx, p Profile, order *pgx.Batch, events []Event) error
	// Start delivers every committed event to sink until the returned stop
	// function is called. pool is the consumer's own.
	Start(ctx context.Context, pool *pgxpool.Pool, sink Sink, p Profile) (stop func(context.Context) error, err error)
	// Pending counts the events the contender has not yet recorded as
	// delivered: what a restart would deliver again.
	Pending(ctx context.Context, pool *pgxpool.Pool) (int64, error)
	// Settings says how p configures the contender, for the report's notes.
	Settings(p Profile) string
	// Tables are the contender's own queue/outbox tables, as LIKE patterns
	// on schema.table: the held-horizon round reports their dead tuples and
	// size.
	Tables() []string
}

// pending runs a contender's Pending statement.
func pending(ctx context.Context, pool *pgxpool.Pool, statement pendingStmt) (int64, error) {
	return statement.Value(ctx, pool, namedsql.NoArgs{})
}

// contenders is every contender, in the order of the first round.
func contenders() []Contender {
	return []Contender{outflowPoll{}, outflowCDC{}, outflowLog{}, &riverQueue{}, watermillSQL{}, &dbosQueue{}}
}
