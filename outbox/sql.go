package outbox

import (
	"context"
	"embed"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/internal/relaysql"
	"github.com/outflow/outflow/outbox/namedsql"
)

// sqlFiles are the package's statements: queries.sql (Enqueue), cdc.sql (the
// CDC source) and lookup.sql (the read-only lookups other packages use
// instead of reading outbox_events). The relay's own, relay.sql, are in
// outbox/internal/relaysql, where the benchmarks reach them too; the operator's
// statements are package outboxops's own.
//
//go:embed *.sql
var sqlFiles embed.FS

// queries holds every statement of sqlFiles and of the relay by name: the one
// place the package loads them. Code reaches a statement through its typed
// handle below, never by its name.
var queries = namedsql.MustMerge(namedsql.MustLoadAll(sqlFiles), relaysql.Queries)

// Every statement is bound to the Go types sqlc would have generated for it
// with namedsql.Bind (outbox/namedsql), the layer every package uses: the
// placeholders are checked against the argument struct when the package is
// initialised, and TestStatementsMatchTheirGoTypes has the database check
// the result columns against the row type.

// reader is what a statement that only reads runs on ([LookupDB]).
type reader interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Arrays of several columns (RelayFail's failures, EnqueueAggregate's events,
// the replay's lanes) are passed as parallel arrays and zipped by unnest: a
// named argument is one Go value, and a slice of structs would have to be a
// composite type registered on every connection of the caller's pool.

// statements describes every bound statement, for the test that has the
// database check them.
var statements = append([]namedsql.Info{
	qLookupEventSequence.Info(), qLookupAggregateEvents.Info(),
	qRelayClaim.Info(), qRelayClaimVerify.Info(), qRelayMark.Info(), qRelayMarkAsync.Info(), qRelayFail.Info(),
	qRelayRelease.Info(), qRelaySinkRelease.Info(), qRelayListen.Info(), qRelayGauges.Info(),
	qEnqueueAggregate.Info(), qEnqueueLogAggregate.Info(), qRelaySource.Info(),
	qCDCSort.Info(), qCDCLease.Info(), qCDCLeaseVerify.Info(), qCDCMark.Info(), qCDCTakeFailed.Info(),
	qCDCDropIdleSlot.Info(),
	qCDCCreateSlot.Info(), qCDCSlot.Info(),
	qBreakerOpen.Info(), qBreakerProbed.Info(), qBreakerClosed.Info(),
}, slices.Concat(logStatements, logSwitchStatements, relaysql.Statements)...)

// The lookups other packages use (lookup.sql).
var (
	qLookupEventSequence   = namedsql.Bind[eventIDArgs, int64](queries, "LookupEventSequence")
	qLookupAggregateEvents = namedsql.Bind[aggregateArgs, AggregateEvent](queries, "LookupAggregateEvents")
)

type aggregateArgs struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
}

// The relay's statements (outbox/internal/relaysql/relay.sql).
var (
	qRelayClaim       = namedsql.Bind[relaysql.ClaimArgs, claimRow](queries, "RelayClaim")
	qRelayClaimVerify = namedsql.Bind[relaysql.EventsArgs, uuid.UUID](queries, "RelayClaimVerify")
	qRelayMark        = namedsql.Bind[relaysql.EventsArgs, uuid.UUID](queries, "RelayMark")
	qRelayMarkAsync   = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "RelayMarkAsync")
	qRelayFail        = namedsql.Bind[relayFailArgs, failRow](queries, "RelayFail")
	qRelayRelease     = namedsql.Bind[relaysql.EventsArgs, namedsql.NoRows](queries, "RelayRelease")
	qRelaySinkRelease = namedsql.Bind[relaySinkReleaseArgs, uuid.UUID](queries, "RelaySinkRelease")
	qRelayListen      = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](queries, "RelayListen")
	qRelayGauges      = namedsql.Bind[namedsql.NoArgs, gaugesRow](queries, "RelayGauges")
)

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
	// TraceContext is NULL (nil) when the event was written without a span.
	TraceContext map[string]string `db:"trace_context"`
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
		TraceContext:  r.TraceContext,
	}
}

// claimRow is one event RelayClaim claimed.
type claimRow struct {
	eventRow
	AttemptCount int  `db:"attempt_count"`
	TookOver     bool `db:"took_over"`
	Replay       bool `db:"replay"`
	Skipped      bool `db:"skipped"`
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

// The write side's statements (queries.sql).
var (
	qEnqueueAggregate    = namedsql.Bind[enqueueAggregateArgs, enqueuedRow](queries, "EnqueueAggregate")
	qRelaySource         = namedsql.Bind[namedsql.NoArgs, string](queries, "RelaySource")
	qEnqueueLogAggregate = namedsql.Bind[enqueueAggregateArgs, enqueuedRow](queries, "EnqueueLogAggregate")
)

// The breaker's record (breaker.sql).
var (
	qBreakerOpen   = namedsql.Bind[breakerOpenArgs, namedsql.NoRows](queries, "BreakerOpen")
	qBreakerProbed = namedsql.Bind[breakerProbedArgs, namedsql.NoRows](queries, "BreakerProbed")
	qBreakerClosed = namedsql.Bind[ownerArgs, namedsql.NoRows](queries, "BreakerClosed")
)

type breakerOpenArgs struct {
	Owner     string    `db:"owner"`
	OpenedAt  time.Time `db:"opened_at"`
	LastError string    `db:"last_error"`
}

type ownerArgs struct {
	Owner string `db:"owner"`
}

type breakerProbedArgs struct {
	Owner     string `db:"owner"`
	LastError string `db:"last_error"`
}

// enqueueAggregateArgs are one aggregate's events, one element of each array
// per event, in sequence order.
type enqueueAggregateArgs struct {
	AggregateType  string      `db:"aggregate_type"`
	AggregateID    string      `db:"aggregate_id"`
	EventIDs       []uuid.UUID `db:"event_ids"`
	EventTypes     []string    `db:"event_types"`
	SchemaVersions []int32     `db:"schema_versions"`
	Payloads       []string    `db:"payloads"`
	// TraceContexts are JSON objects or NULL; empty when no event has one.
	TraceContexts []*string `db:"trace_contexts"`
}

type enqueuedRow struct {
	EventID           uuid.UUID `db:"event_id"`
	AggregateSequence int64     `db:"aggregate_sequence"`
	OccurredAt        time.Time `db:"occurred_at"`
}

type eventIDArgs struct {
	EventID uuid.UUID `db:"event_id"`
}

// The CDC relay source's statements (cdc.sql).
var (
	qCDCSort         = namedsql.Bind[eventIDsArgs, cdcSortRow](queries, "CDCSort")
	qCDCLease        = namedsql.Bind[cdcLeaseArgs, uuid.UUID](queries, "CDCLease")
	qCDCLeaseVerify  = namedsql.Bind[relaysql.EventsArgs, cdcVerifyRow](queries, "CDCLeaseVerify")
	qCDCMark         = namedsql.Bind[relaysql.EventsArgs, uuid.UUID](queries, "CDCMark")
	qCDCTakeFailed   = namedsql.Bind[cdcTakeFailedArgs, cdcTakenRow](queries, "CDCTakeFailed")
	qCDCDropIdleSlot = namedsql.Bind[dropSlotArgs, string](queries, "CDCDropIdleSlot")
	qCDCCreateSlot   = namedsql.Bind[slotArgs, string](queries, "CDCCreateSlot")
	qCDCSlot         = namedsql.Bind[slotArgs, slotState](queries, "CDCSlot")
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

type slotArgs struct {
	SlotName string `db:"slot_name"`
}
