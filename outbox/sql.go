package outbox

import (
	"context"
	"embed"
	"fmt"
	"reflect"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/outflow/outflow/internal/namedsql"
	"github.com/outflow/outflow/internal/relaysql"
)

// sqlFiles are the package's statements: queries.sql (Enqueue), cdc.sql (the
// CDC source) and lookup.sql (the read-only lookups other packages use
// instead of reading outbox_events). The relay's own, relay.sql, are in
// internal/relaysql, where the benchmarks reach them too; the operator's
// statements are package outboxops's own.
//
//go:embed *.sql
var sqlFiles embed.FS

// queries holds every statement of sqlFiles and of the relay by name: the one
// place the package loads them. Code reaches a statement through its typed
// handle below, never by its name.
var queries = namedsql.MustMerge(namedsql.MustLoadAll(sqlFiles), relaysql.Queries)

// stmt is one statement of the .sql files with the Go types sqlc would have
// generated for it. A is the struct of its arguments: each @name placeholder
// is the field tagged db:"name", bound with pgx.StrictStructArgs. R is what
// one result row becomes: a struct whose db tags are the statement's column
// names (read with pgx.RowToStructByName, so a column is found by its name,
// not its place), the Go type of a statement's single column (pgx.RowTo), or
// noRows when its rows are not read.
//
// newStmt resolves the name and checks the placeholders against A's fields
// with pgx's own parser, strictly (a placeholder without a field and a field
// without a placeholder are both errors), when the package is initialised:
// a misspelt statement or argument name panics at start, in every test and
// every binary, not at the call. Result columns can only be checked against
// R by a database, which describes each statement in
// TestStatementsMatchTheirGoTypes.
type stmt[A, R any] struct {
	sql string
	// named is false for a statement without placeholders, which pgx then
	// sends as it is, with no rewriting.
	named bool
	rowTo pgx.RowToFunc[R]
}

// noArgs is the arguments of a statement without placeholders.
type noArgs struct{}

// noRows is the row of a statement whose rows are not read (:exec).
type noRows struct{}

// querier is what a statement runs on: a pgx.Tx, a *pgxpool.Pool or
// a *pgx.Conn.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	reader
}

// reader is what a statement that only reads runs on ([LookupDB]).
type reader interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// stmts describes every bound statement, for the tests that check them.
var stmts []stmtInfo

type stmtInfo struct {
	name string
	// positional is the statement as pgx sends it, placeholders numbered.
	positional string
	// columns are R's db tags; nil when R is one column or noRows.
	columns []string
	// rows: whether the statement's rows are read.
	rows bool
}

func newStmt[A, R any](name string) stmt[A, R] {
	s := stmt[A, R]{sql: queries.Get(name)} // panics on an unknown name
	at, rt := reflect.TypeFor[A](), reflect.TypeFor[R]()
	if at.Kind() != reflect.Struct {
		panic(fmt.Sprintf("outbox: statement %s: its arguments must be a struct, not %s", name, at))
	}
	var a A
	positional, _, err := pgx.StrictStructArgs(a).RewriteQuery(context.Background(), nil, s.sql, nil)
	if err != nil {
		panic(fmt.Sprintf("outbox: statement %s and its arguments %s disagree: %v", name, at, err))
	}
	s.named = at.NumField() > 0
	info := stmtInfo{name: name, positional: positional, rows: rt != reflect.TypeFor[noRows]()}
	if cols := dbTags(rt); len(cols) > 0 {
		s.rowTo = pgx.RowToStructByName[R]
		info.columns = cols
	} else {
		s.rowTo = pgx.RowTo[R]
	}
	stmts = append(stmts, info)
	return s
}

// dbTags returns the db tags of t's fields when t is a struct that has any.
func dbTags(t reflect.Type) []string {
	if t.Kind() != reflect.Struct {
		return nil
	}
	var tags []string
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, ok := f.Tag.Lookup("db"); ok && tag != "-" {
			tags = append(tags, tag)
		} else if !ok && f.Anonymous {
			tags = append(tags, dbTags(f.Type)...) // pgx flattens an embedded struct
		}
	}
	return tags
}

// args binds a to the statement's placeholders: the arguments of a pgx query
// method or of pgx.Batch.Queue after the statement's text.
func (s stmt[A, R]) args(a A) []any {
	if !s.named {
		return nil
	}
	return []any{pgx.StrictStructArgs(a)}
}

// exec runs the statement and discards its rows.
func (s stmt[A, R]) exec(ctx context.Context, db querier, a A) (pgconn.CommandTag, error) {
	return db.Exec(ctx, s.sql, s.args(a)...)
}

// rows runs the statement and leaves its rows to the caller.
func (s stmt[A, R]) rows(ctx context.Context, db reader, a A) (pgx.Rows, error) {
	return db.Query(ctx, s.sql, s.args(a)...)
}

// all runs the statement and returns every row.
func (s stmt[A, R]) all(ctx context.Context, db reader, a A) ([]R, error) {
	rows, err := s.rows(ctx, db, a)
	if err != nil {
		return nil, err
	}
	return s.collect(rows)
}

// one runs the statement and returns its first row, or pgx.ErrNoRows.
func (s stmt[A, R]) one(ctx context.Context, db reader, a A) (R, error) {
	rows, err := s.rows(ctx, db, a)
	if err != nil {
		var zero R
		return zero, err
	}
	return pgx.CollectOneRow(rows, s.rowTo)
}

// collect reads every row of the statement's result rows, e.g. in a batch.
func (s stmt[A, R]) collect(rows pgx.Rows) ([]R, error) {
	return pgx.CollectRows(rows, s.rowTo)
}

// queue adds the statement to b.
func (s stmt[A, R]) queue(b *pgx.Batch, a A) *pgx.QueuedQuery {
	return b.Queue(s.sql, s.args(a)...)
}

// Arrays of several columns (RelayFail's failures, EnqueueAggregate's events,
// the replay's lanes) are passed as parallel arrays and zipped by unnest: a
// named argument is one Go value, and a slice of structs would have to be a
// composite type registered on every connection of the caller's pool.

// The lookups other packages use (lookup.sql).
var (
	qLookupEventSequence   = newStmt[eventIDArgs, int64]("LookupEventSequence")
	qLookupAggregateEvents = newStmt[aggregateArgs, AggregateEvent]("LookupAggregateEvents")
)

type aggregateArgs struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
}

// The relay's statements (internal/relaysql/relay.sql).
var (
	qRelayClaim       = newStmt[relayClaimArgs, claimRow]("RelayClaim")
	qRelayClaimVerify = newStmt[relayEventsArgs, uuid.UUID]("RelayClaimVerify")
	qRelayMark        = newStmt[relayEventsArgs, uuid.UUID]("RelayMark")
	qRelayMarkAsync   = newStmt[noArgs, noRows]("RelayMarkAsync")
	qRelayFail        = newStmt[relayFailArgs, failRow]("RelayFail")
	qRelayRelease     = newStmt[relayEventsArgs, noRows]("RelayRelease")
	qRelaySinkRelease = newStmt[relaySinkReleaseArgs, uuid.UUID]("RelaySinkRelease")
	qRelayListen      = newStmt[noArgs, noRows]("RelayListen")
	qRelayGauges      = newStmt[noArgs, gaugesRow]("RelayGauges")
)

type relayClaimArgs struct {
	Owner       string `db:"owner"`
	BatchSize   int    `db:"batch_size"`
	LeaseMS     int64  `db:"lease_ms"`
	MaxAttempts int    `db:"max_attempts"`
	// MinAgeMS and HandedOff narrow a CDC sweeper's claim; zero for a
	// polling relay.
	MinAgeMS  int64       `db:"min_age_ms"`
	HandedOff []uuid.UUID `db:"handed_off"`
	// Held are the events this relay still holds (pipeline.go); none for a
	// claim outside Run's pipeline.
	Held []uuid.UUID `db:"held"`
}

// eventRow is an event's own columns, as a statement that hands events to
// a publisher returns them; embedded in claimRow and cdcSortRow (pgx reads
// an embedded struct's fields as the row's).
type eventRow struct {
	EventID           uuid.UUID `db:"event_id"`
	AggregateType     string    `db:"aggregate_type"`
	AggregateID       string    `db:"aggregate_id"`
	AggregateSequence int64     `db:"aggregate_sequence"`
	EventType         string    `db:"event_type"`
	SchemaVersion     int       `db:"schema_version"`
	Payload           []byte    `db:"payload"`
	OccurredAt        time.Time `db:"occurred_at"`
}

func (r eventRow) event() Event {
	return Event{
		ID:            r.EventID,
		AggregateType: r.AggregateType,
		AggregateID:   r.AggregateID,
		Sequence:      r.AggregateSequence,
		Type:          r.EventType,
		SchemaVersion: r.SchemaVersion,
		Payload:       r.Payload,
		OccurredAt:    r.OccurredAt,
	}
}

// claimRow is one event RelayClaim claimed.
type claimRow struct {
	eventRow
	AttemptCount int  `db:"attempt_count"`
	TookOver     bool `db:"took_over"`
	Replay       bool `db:"replay"`
}

// relayEventsArgs are some events of the relay called Owner.
type relayEventsArgs struct {
	Owner    string      `db:"owner"`
	EventIDs []uuid.UUID `db:"event_ids"`
}

// relayFailArgs are failed publishes, one element of each array per event.
type relayFailArgs struct {
	Owner       string      `db:"owner"`
	EventIDs    []uuid.UUID `db:"event_ids"`
	Errors      []string    `db:"errors"`
	DelaysMS    []int64     `db:"delays_ms"`
	Permanent   []bool      `db:"permanent"`
	MaxAttempts int         `db:"max_attempts"`
}

// relaySinkReleaseArgs are publishes that failed for the sink's fault, one
// element of each array per event.
type relaySinkReleaseArgs struct {
	Owner    string      `db:"owner"`
	EventIDs []uuid.UUID `db:"event_ids"`
	Errors   []string    `db:"errors"`
	DelaysMS []int64     `db:"delays_ms"`
}

type failRow struct {
	EventID     uuid.UUID `db:"event_id"`
	Quarantined bool      `db:"quarantined"`
}

type gaugesRow struct {
	Pending                 int64   `db:"pending"`
	OldestPendingAgeSeconds float64 `db:"oldest_pending_age_seconds"`
	Quarantined             int64   `db:"quarantined"`
}

// The write side's statement (queries.sql).
var qEnqueueAggregate = newStmt[enqueueAggregateArgs, enqueuedRow]("EnqueueAggregate")

// enqueueAggregateArgs are one aggregate's events, one element of each array
// per event, in sequence order.
type enqueueAggregateArgs struct {
	AggregateType  string      `db:"aggregate_type"`
	AggregateID    string      `db:"aggregate_id"`
	EventIDs       []uuid.UUID `db:"event_ids"`
	EventTypes     []string    `db:"event_types"`
	SchemaVersions []int32     `db:"schema_versions"`
	Payloads       []string    `db:"payloads"`
}

type enqueuedRow struct {
	EventID           uuid.UUID `db:"event_id"`
	AggregateSequence int64     `db:"aggregate_sequence"`
	OccurredAt        time.Time `db:"occurred_at"`
}

type eventIDArgs struct {
	EventID uuid.UUID `db:"event_id"`
}

type lockKeyArgs struct {
	LockKey int64 `db:"lock_key"`
}

// The CDC relay source's statements (cdc.sql).
var (
	qCDCSort             = newStmt[eventIDsArgs, cdcSortRow]("CDCSort")
	qCDCLease            = newStmt[cdcLeaseArgs, uuid.UUID]("CDCLease")
	qCDCLeaseVerify      = newStmt[relayEventsArgs, cdcVerifyRow]("CDCLeaseVerify")
	qCDCMark             = newStmt[relayEventsArgs, uuid.UUID]("CDCMark")
	qCDCTakeFailed       = newStmt[cdcTakeFailedArgs, cdcTakenRow]("CDCTakeFailed")
	qCDCWALLevel         = newStmt[noArgs, string]("CDCWALLevel")
	qCDCPublicationExist = newStmt[publicationArgs, bool]("CDCPublicationExists")
	qCDCPublicationLock  = newStmt[lockKeyArgs, noRows]("CDCPublicationLock")
	qCDCPublicationMake  = newStmt[noArgs, noRows]("CDCPublicationCreate")
	qCDCCreateSlot       = newStmt[slotArgs, string]("CDCCreateSlot")
	qCDCSlot             = newStmt[slotArgs, SlotStatus]("CDCSlot")
)

type eventIDsArgs struct {
	EventIDs []uuid.UUID `db:"event_ids"`
}

// cdcSortRow is one received event as the table has it, and what the
// stream may do with it (see CDCSort).
type cdcSortRow struct {
	eventRow
	Verdict  string      `db:"verdict"`
	Blockers []uuid.UUID `db:"blockers"`
}

// cdcLeaseArgs are the events the stream (Owner) leases for LeaseMS.
type cdcLeaseArgs struct {
	Owner    string      `db:"owner"`
	EventIDs []uuid.UUID `db:"event_ids"`
	LeaseMS  int64       `db:"lease_ms"`
}

// cdcVerifyRow is one leased event as CDCLeaseVerify found it: given back
// (Blocked), or kept with the predecessors the stream must hold.
type cdcVerifyRow struct {
	EventID  uuid.UUID   `db:"event_id"`
	Blocked  bool        `db:"blocked"`
	Blockers []uuid.UUID `db:"blockers"`
}

type cdcTakeFailedArgs struct {
	Owner       string      `db:"owner"`
	StreamOwner string      `db:"stream_owner"`
	EventIDs    []uuid.UUID `db:"event_ids"`
	LeaseMS     int64       `db:"lease_ms"`
}

type cdcTakenRow struct {
	EventID      uuid.UUID `db:"event_id"`
	AttemptCount int       `db:"attempt_count"`
}

type publicationArgs struct {
	Publication string `db:"publication"`
}

type slotArgs struct {
	SlotName string `db:"slot_name"`
}
