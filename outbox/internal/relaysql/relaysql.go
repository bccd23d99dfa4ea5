// Package relaysql holds the outbox relay's statements (relay.sql) and the
// argument types of those both users bind ([ClaimArgs], [EventsArgs]). Package
// outbox binds them to its own row types and runs them; the benchmarks and the
// backlog test bind RelayClaim and RelayMark through
// outbox/outboxtest/outboxbench to run them without a Relay. The statements live
// here rather than inside package outbox so that a benchmark imports what it
// measures while no production binary links benchmark code. LogGauges and
// CDCSlot are here too, as package outboxops reads them for the operator's
// status beside the relay's own use, and so is [CheckCDC], which a relay
// runs at start and outboxops before a switch to the cdc source.
package relaysql

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"

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

// The cdc source's objects in the database, by default.
const (
	// CDCSlotDefault is the logical replication slot the cdc source
	// streams (RelayConfig.CDCSlot's default).
	CDCSlotDefault = "outflow_outbox"
	// CDCPublicationDefault is the publication it streams
	// (RelayConfig.CDCPublication's default), made by the outbox's
	// migration 00020.
	CDCPublicationDefault = "outflow_outbox"
)

// ErrWALLevel is wrapped by [CheckCDC]'s error on a server without
// wal_level=logical.
var ErrWALLevel = errors.New("outbox: the cdc relay source needs wal_level=logical")

// PublicationArgs name a publication.
type PublicationArgs struct {
	Publication string `db:"publication"`
}

var (
	qCDCWALLevel          = namedsql.Bind[namedsql.NoArgs, string](Queries, "CDCWALLevel")
	qCDCPublicationExists = namedsql.Bind[PublicationArgs, bool](Queries, "CDCPublicationExists")
)

// Statements are the statements this package runs itself, for the test
// that has the database check every bound statement.
var Statements = []namedsql.Info{qCDCWALLevel.Info(), qCDCPublicationExists.Info()}

// CheckCDC reports whether the server behind db can serve the cdc relay
// source: wal_level=logical and the publication ("" means
// [CDCPublicationDefault]). Its errors say what to change.
func CheckCDC(ctx context.Context, db namedsql.Querier, publication string) error {
	level, err := qCDCWALLevel.One(ctx, db, namedsql.NoArgs{})
	if err != nil {
		return fmt.Errorf("outbox: read wal_level: %w", err)
	}
	if level != "logical" {
		return fmt.Errorf("%w; the server runs with wal_level=%s. Set wal_level = logical (postgresql.conf, ALTER SYSTEM SET wal_level = logical, or postgres -c wal_level=logical) and restart PostgreSQL, or use the polling source (`outboxctl source set poll`)",
			ErrWALLevel, level)
	}
	publication = cmp.Or(publication, CDCPublicationDefault)
	ok, err := qCDCPublicationExists.One(ctx, db, PublicationArgs{Publication: publication})
	if err != nil {
		return fmt.Errorf("outbox: look up publication %s: %w", publication, err)
	}
	if !ok {
		if publication == CDCPublicationDefault {
			return fmt.Errorf("outbox: the publication %s does not exist; the outbox's migrations make it (outbox.Migrate or `outboxctl migrate`): if they ran, it was dropped since, and `CREATE PUBLICATION %s FOR TABLE outbox_events WITH (publish = 'insert')` makes it again", publication, publication)
		}
		return fmt.Errorf("outbox: the publication %s (RelayConfig.CDCPublication) does not exist; make it with `CREATE PUBLICATION %s FOR TABLE outbox_events WITH (publish = 'insert')`, or leave CDCPublication empty for the outbox's own, %s", publication, publication, CDCPublicationDefault)
	}
	return nil
}
