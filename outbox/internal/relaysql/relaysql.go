// Package relaysql holds the outbox relay's statements (relay.sql) and the
// argument types of those both users bind ([ClaimArgs], [EventsArgs]). Package
// outbox binds them to its own row types and runs them; the benchmarks and the
// backlog test bind RelayClaim and RelayMark through
// outbox/outboxtest/outboxbench to run them without a Relay. The statements live
// here rather than inside package outbox so that a benchmark imports what it
// measures while no production binary links benchmark code. LogGauges and
// CDCSlot are here too, as package outboxops reads them for the operator's
// status beside the relay's own use.
package relaysql

import (
	"embed"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox/namedsql"
)

//go:embed relay.sql
var files embed.FS

// Queries are relay.sql's statements by name. Code reaches them through a
// statement bound with [namedsql.Bind], never by text.
var Queries = namedsql.MustLoad(files, "relay.sql")

// ClaimArgs are RelayClaim's placeholders, which package outbox and the
// benchmarks (outbox/outboxtest/outboxbench) bind the statement with.
type ClaimArgs struct {
	Owner       string `db:"owner"`
	BatchSize   int    `db:"batch_size"`
	LeaseMS     int64  `db:"lease_ms"`
	MaxAttempts int    `db:"max_attempts"`
	// MinAgeMS and HandedOff narrow a CDC sweeper's claim; zero for a
	// polling relay.
	MinAgeMS  int64       `db:"min_age_ms"`
	HandedOff []uuid.UUID `db:"handed_off"`
	// Held are the events this relay still holds (outbox's pipeline); none
	// for a claim outside Run's pipeline.
	Held []uuid.UUID `db:"held"`
}

// EventsArgs are some events of the relay called Owner: the placeholders
// of RelayClaimVerify, RelayMark and RelayRelease (and of the CDC
// statements of that shape).
type EventsArgs struct {
	Owner    string      `db:"owner"`
	EventIDs []uuid.UUID `db:"event_ids"`
}

// LogGaugesRow is LogGauges' row: the log relay's gauges and, in package
// outboxops, the status's counts.
type LogGaugesRow struct {
	HorizonAgeSeconds float64 `db:"horizon_age_seconds"`
	Pending           int64   `db:"pending"`
	OldestPendingAge  float64 `db:"oldest_pending_age_seconds"`
	Holds             int64   `db:"holds"`
	Quarantined       int64   `db:"quarantined"`
	RangesAhead       int64   `db:"ranges_ahead"`
}
