package outboxops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outflow/outflow/outbox/internal/relaysql"
	"github.com/outflow/outflow/outbox/namedsql"
)

// A relay source: where the producers of a database write its events
// (outbox.Enqueue reads it in the same statement) and which relay reads
// them. It is recorded in the database (table outbox_source), changed with
// [SetSource] (`outboxctl source set`), and every starter follows it
// without a restart.
const (
	// SourcePoll: events go to outbox_events and relays claim them with
	// queries. Any PostgreSQL works. The default.
	SourcePoll = "poll"
	// SourceCDC: events go to outbox_events and relays stream them from
	// logical replication (wal_level=logical), with a polling sweeper.
	SourceCDC = "cdc"
	// SourceLog: events go to the append-only log outbox_log, which relays
	// read by position, writing nothing per event.
	SourceLog = "log"
)

// ErrSource is wrapped by [SetSource]'s refusal of a source it does not
// know; the message lists the sources.
var ErrSource = errors.New("outbox: unknown relay source")

// SourceState is a database's relay source and what each table still
// holds that no relay has published.
type SourceState struct {
	// Source is [SourcePoll], [SourceCDC] or [SourceLog].
	Source string `db:"source" json:"source"`
	// ChangedAt, ChangedBy and Reason record the last change ("migration"
	// for the default the schema set).
	ChangedAt time.Time `db:"changed_at" json:"changed_at"`
	ChangedBy string    `db:"changed_by" json:"changed_by"`
	Reason    string    `db:"reason" json:"reason"`
	// EventsPending counts the events of outbox_events a relay still has
	// to publish (skipped ones whose tombstone is not out included);
	// EventsQuarantined those waiting for an operator.
	EventsPending     int64 `db:"events_pending" json:"events_pending"`
	EventsQuarantined int64 `db:"events_quarantined" json:"events_quarantined"`
	// LogPending counts the log's events after their partition's cursor;
	// LogHolds the orders under a hold (backoff, replay, quarantine),
	// LogQuarantined the quarantined holds.
	LogPending     int64 `db:"log_pending" json:"log_pending"`
	LogHolds       int64 `db:"log_holds" json:"log_holds"`
	LogQuarantined int64 `db:"log_quarantined" json:"log_quarantined"`
}

// Source returns the database's relay source and what each table holds.
// A database migrated before the source was recorded fails with an error
// that says to migrate.
func Source(ctx context.Context, db DB) (SourceState, error) {
	st, err := qOpsSource.One(ctx, db, namedsql.NoArgs{})
	if err != nil {
		return SourceState{}, explainNoSourceTable(err)
	}
	return st, nil
}

// ParseSource returns s as a relay source (case and spaces ignored), or
// an error wrapping [ErrSource] that lists them.
func ParseSource(s string) (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case SourcePoll, SourceCDC, SourceLog:
		return v, nil
	}
	return "", fmt.Errorf("%w %q: want poll (claim committed events from outbox_events by polling), "+
		"cdc (stream them from logical replication; needs wal_level=logical) or log (the append-only log outbox_log)", ErrSource, s)
}

// SourceChange is what [SetSource] did.
type SourceChange struct {
	// Previous is the source before the change; equal to the new one when
	// nothing changed.
	Previous string
	// ChangedAt is when the change was recorded (the database's clock).
	ChangedAt time.Time
}

type setSourceArgs struct {
	Source    string `db:"source"`
	ChangedBy string `db:"changed_by"`
	Reason    string `db:"reason"`
}

type setSourceRow struct {
	Previous  string    `db:"previous"`
	ChangedAt time.Time `db:"changed_at"`
}

// SetSource records source as the database's relay source, by actor (who
// decided; mandatory) for reason. It takes effect at once, while producers
// and relays run: the producers' next enqueue writes where source says,
// and every starter follows within a second
// (every second), publishing what the old source still
// holds first and sweeping it afterwards, so nothing is stranded, reordered
// or published twice across the change (an order's lane runs across both
// tables). A transaction that read the old source and commits after the
// change wrote where it read; that event is published in sequence too.
//
// A change to [SourceLog] makes the log's partitions ahead of its
// sequence in the same transaction. A change to [SourceCDC] is refused,
// changing nothing, on a server the cdc source cannot stream from: one
// without wal_level=logical (the error wraps [ErrWALLevel]) or a database
// without the outbox's publication; the error says what to change.
func SetSource(ctx context.Context, db DB, source, actor, reason string) (SourceChange, error) {
	var c SourceChange
	err := inTx(ctx, db, func(tx pgx.Tx) error {
		var err error
		c, err = SetSourceTx(ctx, tx, source, actor, reason)
		return err
	})
	return c, err
}

// CheckSource reports whether the server behind db can serve source: for
// [SourceCDC], wal_level=logical and the outbox's publication (the error
// wraps [ErrWALLevel] on a server without the one, names the fix for
// either); poll and log need nothing more than the outbox's schema.
// [SetSource] checks it too: call it first to refuse before anything else.
func CheckSource(ctx context.Context, db namedsql.Querier, source string) error {
	src, err := ParseSource(source)
	if err != nil {
		return err
	}
	if src == SourceCDC {
		return relaysql.CheckCDC(ctx, db, "")
	}
	return nil
}

// SetSourceTx is [SetSource] inside the caller's transaction: the change
// is seen by producers and relays when tx commits.
func SetSourceTx(ctx context.Context, tx pgx.Tx, source, actor, reason string) (SourceChange, error) {
	src, err := ParseSource(source)
	if err != nil {
		return SourceChange{}, err
	}
	if strings.TrimSpace(actor) == "" {
		return SourceChange{}, errors.New("outbox: a source change needs an actor (who decided it), recorded in outbox_source.changed_by")
	}
	if err := CheckSource(ctx, tx, src); err != nil {
		return SourceChange{}, fmt.Errorf("%w; the source was not changed", err)
	}
	row, err := qOpsSetSource.One(ctx, tx, setSourceArgs{Source: src, ChangedBy: actor, Reason: reason})
	if err != nil {
		return SourceChange{}, fmt.Errorf("outbox: set the relay source to %s: %w", src, explainNoSourceTable(err))
	}
	return SourceChange(row), nil
}

// explainNoSourceTable names the fix when outbox_source does not exist.
func explainNoSourceTable(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" && strings.Contains(pgErr.Message, "outbox_source") {
		return fmt.Errorf("%w (the database's outbox schema predates the recorded relay source: run `outboxctl migrate --outbox-only`)", err)
	}
	return err
}
