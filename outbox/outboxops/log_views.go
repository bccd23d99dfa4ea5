package outboxops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
)

// The operator's views of the log source (outboxctl status, list, show,
// retry --quarantined, replay): reads only, beside the commands of
// log_commands.go that change the holds.

type logPartitionRow struct {
	LogPartitionStatus
	Used  bool      `db:"used"`
	DBNow time.Time `db:"db_now"`
}

type logHoldFilterArgs struct {
	QuarantinedSince *time.Time `db:"quarantined_since"`
	Until            *time.Time `db:"until"`
	ErrorContains    string     `db:"error_contains"`
	AggregateType    string     `db:"aggregate_type"`
}

type logOpPendingArgs struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
	MaxEvents     int    `db:"max_events"`
	AfterSet      bool   `db:"after_set"`
	AfterGate     int64  `db:"after_gate"`
	AfterPos      int64  `db:"after_pos"`
}

// logPendingRow is a row of LogOpPending: an event and its key.
type logPendingRow struct {
	EventID uuid.UUID `db:"event_id"`
	Gate    int64     `db:"gate"`
	Pos     int64     `db:"pos"`
}

type logOpEventsArgs struct {
	EventIDs      []uuid.UUID `db:"event_ids"`
	AggregateType string      `db:"aggregate_type"`
	AggregateID   string      `db:"aggregate_id"`
}

// LogPartitionStatus is one partition of the log source as an operator
// sees it: its cursor, its lease, what waits after the cursor and its
// holds.
type LogPartitionStatus struct {
	Partition int `db:"partition" json:"partition"`
	// Gate and Pos are the cursor: the last key its reader passed.
	Gate int64 `db:"gate" json:"gate"`
	Pos  int64 `db:"pos" json:"pos"`
	// Owner is the relay holding its lease ("" when none ever did or it
	// was given back); LeaseUntil when the lease ends.
	Owner      *string    `db:"owner" json:"owner,omitempty"`
	LeaseUntil *time.Time `db:"lease_until" json:"lease_until,omitempty"`
	Epoch      int64      `db:"epoch" json:"epoch"`
	// Tries counts the batches begun at the cursor that never finished (a
	// relay died in them; at 2 the next read isolates the event).
	Tries      int        `db:"tries" json:"tries"`
	AdvancedAt *time.Time `db:"advanced_at" json:"advanced_at,omitempty"`
	// Pending counts the committed events after the cursor, readable or
	// waiting for the horizon.
	Pending     int64 `db:"pending" json:"pending"`
	Holds       int64 `db:"holds" json:"holds"`
	Quarantined int64 `db:"quarantined" json:"quarantined"`
}

// LogStatusReport is the log source's state at one moment, for operators
// (`outboxctl status`).
type LogStatusReport struct {
	// Used says whether the log was ever written: an event in it, or a
	// cursor moved. A database whose producers write outbox_events only
	// has an unused log.
	Used bool `json:"used"`
	// CheckedAt is the database's clock when the report was taken.
	CheckedAt time.Time `json:"checked_at"`
	// HorizonAgeSeconds is how long the oldest transaction holding an xid
	// on the server has been open (outbox_log_horizon_age_seconds): no log
	// event committed after it began is read until it ends.
	HorizonAgeSeconds float64 `json:"horizon_age_seconds"`
	// Pending counts the events after the cursors; OldestPendingAgeSeconds
	// is the age of the oldest partition's next one (0 when none).
	Pending                 int64   `json:"pending"`
	OldestPendingAgeSeconds float64 `json:"oldest_pending_age_seconds"`
	// Holds counts the orders under a hold, Quarantined those of them
	// waiting for an operator (RetryLogHold, SkipLogHold).
	Holds       int64                `json:"holds"`
	Quarantined int64                `json:"quarantined"`
	Partitions  []LogPartitionStatus `json:"partitions"`
	// Ranges are outbox_log's range partitions (RetainLog).
	Ranges LogRanges `json:"ranges"`
}

// LogStatus reports the log source's cursors, leases, pending events and
// holds, and the horizon's age. Its counts visit the events after the
// cursors only.
func LogStatus(ctx context.Context, db outbox.LookupDB) (LogStatusReport, error) {
	g, err := qLogGauges.One(ctx, db, namedsql.NoArgs{})
	if err != nil {
		return LogStatusReport{}, fmt.Errorf("outbox: log status: %w", err)
	}
	rows, err := qLogOpPartitions.All(ctx, db, namedsql.NoArgs{})
	if err != nil {
		return LogStatusReport{}, fmt.Errorf("outbox: log status: partitions: %w", err)
	}
	r := LogStatusReport{
		HorizonAgeSeconds: g.HorizonAgeSeconds, Pending: g.Pending, OldestPendingAgeSeconds: g.OldestPendingAge,
		Holds: g.Holds, Quarantined: g.Quarantined, Partitions: []LogPartitionStatus{},
	}
	for _, p := range rows {
		r.Used, r.CheckedAt = p.Used, p.DBNow
		r.Partitions = append(r.Partitions, p.LogPartitionStatus)
	}
	if r.Ranges, err = LogRangesOf(ctx, db); err != nil {
		return LogStatusReport{}, fmt.Errorf("outbox: log status: %w", err)
	}
	return r, nil
}

// LogHoldFilter selects quarantined holds for [QuarantinedLogHolds]. Every
// field is optional; the zero filter selects every quarantined hold.
type LogHoldFilter struct {
	// Since selects holds quarantined at or after it. Optional: any time.
	Since time.Time
	// Until selects holds quarantined at or before it (a bulk retry's
	// start). Optional: any time.
	Until time.Time
	// ErrorContains selects holds whose last_error contains it, ignoring
	// case. Optional: any error.
	ErrorContains string
	// AggregateType selects orders of this aggregate type. Optional: any.
	AggregateType string
}

func (f LogHoldFilter) args() logHoldFilterArgs {
	a := logHoldFilterArgs{ErrorContains: f.ErrorContains, AggregateType: f.AggregateType}
	if !f.Since.IsZero() {
		a.QuarantinedSince = &f.Since
	}
	if !f.Until.IsZero() {
		a.Until = &f.Until
	}
	return a
}

// LogHold is a quarantined hold of the log source with its head:
// the event its hold worker publishes next, which [SkipLogHold] gives up.
type LogHold struct {
	AggregateType string    `db:"aggregate_type" json:"aggregate_type"`
	AggregateID   string    `db:"aggregate_id" json:"aggregate_id"`
	Partition     int       `db:"partition" json:"partition"`
	Attempts      int       `db:"attempts" json:"attempt_count"`
	LastError     string    `db:"last_error" json:"last_error,omitempty"`
	QuarantinedAt time.Time `db:"quarantined_at" json:"quarantined_at"`
	// Replay: an operator's replay made the hold (ReplayLogOrder).
	Replay bool `db:"replay" json:"replay"`
	// The head; nil when the hold has none left (retry or skip releases
	// it).
	EventID    *uuid.UUID `db:"event_id" json:"event_id,omitempty"`
	Sequence   *int64     `db:"aggregate_sequence" json:"aggregate_sequence,omitempty"`
	EventType  *string    `db:"event_type" json:"event_type,omitempty"`
	OccurredAt *time.Time `db:"occurred_at" json:"occurred_at,omitempty"`
}

// QuarantinedLogHolds lists the quarantined holds f selects, oldest
// quarantine first, each with its head.
func QuarantinedLogHolds(ctx context.Context, db DB, f LogHoldFilter) ([]LogHold, error) {
	hs, err := qLogOpQuarantined.All(ctx, db, f.args())
	if err != nil {
		return nil, fmt.Errorf("outbox: list quarantined log holds: %w", err)
	}
	return hs, nil
}

// RetryQuarantinedLogHolds does what [RetryLogHold] does to every
// quarantined hold f selects, each in a transaction of its own (a
// savepoint when db is a pgx.Tx) that locks its partition's cursor row
// first, and returns those it retried. A hold an operator or the hold worker
// changed since the list is left alone. outboxops.RetryQuarantined calls it
// after the quarantined events and audits the count.
func RetryQuarantinedLogHolds(ctx context.Context, db DB, f LogHoldFilter) ([]LogHold, error) {
	hs, err := QuarantinedLogHolds(ctx, db, f)
	if err != nil {
		return nil, err
	}
	var done []LogHold
	for _, h := range hs {
		err := retryLogHold(ctx, db, h.AggregateType, h.AggregateID)
		if errors.Is(err, ErrNoQuarantinedHold) {
			continue
		}
		if err != nil {
			return done, err
		}
		done = append(done, h)
	}
	return done, nil
}

// LogEvent is one event of the log with its state, as [LogEvents] and
// [LogEventByID] report it.
type LogEvent struct {
	ID            uuid.UUID `db:"event_id" json:"event_id"`
	Pos           int64     `db:"pos" json:"pos"`
	Gate          int64     `db:"gate" json:"gate"`
	Partition     int       `db:"partition" json:"partition"`
	AggregateType string    `db:"aggregate_type" json:"aggregate_type"`
	AggregateID   string    `db:"aggregate_id" json:"aggregate_id"`
	Sequence      int64     `db:"aggregate_sequence" json:"aggregate_sequence"`
	Type          string    `db:"event_type" json:"event_type"`
	SchemaVersion int       `db:"schema_version" json:"schema_version"`
	OccurredAt    time.Time `db:"occurred_at" json:"occurred_at"`
	// Passed: its partition's cursor is at or after it.
	Passed bool `db:"passed" json:"passed"`
	// Held: its order's hold owns it; Head: the hold publishes it next.
	Held bool `db:"held" json:"held"`
	Head bool `db:"head" json:"head"`
	// The hold's quarantine, attempts, last error and whether a replay
	// made it (zero without a hold).
	QuarantinedAt *time.Time `db:"quarantined_at" json:"quarantined_at,omitempty"`
	Attempts      int        `db:"attempts" json:"attempt_count"`
	LastError     string     `db:"last_error" json:"last_error,omitempty"`
	Replay        bool       `db:"replay" json:"replay,omitempty"`
	// Redelivery: its hold is a replay's and it was delivered before the
	// replay (at or behind the cursor the replay saw); a skip of it gives
	// up that redelivery only and leaves it published.
	Redelivery bool `db:"redelivery" json:"redelivery,omitempty"`
	// Retiring: a range of the log that retention is dropping (or
	// dropped) ends after its position, so a replay from it is refused
	// ([ErrLogRangeRetiring]): its order's later events may be in it.
	Retiring bool `db:"retiring" json:"retiring,omitempty"`
	// The skip (SkipLogHold), if it was skipped: it is never published, and
	// a replay of its order hands only its tombstone again.
	SkippedAt  *time.Time `db:"skipped_at" json:"skipped_at,omitempty"`
	SkippedBy  *string    `db:"skipped_by" json:"skipped_by,omitempty"`
	SkipReason *string    `db:"skip_reason" json:"skip_reason,omitempty"`
}

// State is the event's place in its life, in the words of outbox_events'
// states: "skipped", "quarantined" (its order's hold is quarantined and
// owns it), "held" (its hold will publish it), "published" (the cursor
// passed it, no hold owns it), "pending" (after the cursor).
func (e LogEvent) State() string {
	switch {
	case e.SkippedAt != nil:
		return "skipped"
	case e.Held && e.QuarantinedAt != nil:
		return "quarantined"
	case e.Held:
		return "held"
	case e.Passed:
		return "published"
	default:
		return "pending"
	}
}

// LogEvents lists the log events of aggregateType/aggregateID with their
// states, in key order (which is sequence order).
func LogEvents(ctx context.Context, db outbox.LookupDB, aggregateType, aggregateID string) ([]LogEvent, error) {
	es, err := qLogOpEvents.All(ctx, db, logOpEventsArgs{AggregateType: aggregateType, AggregateID: aggregateID})
	if err != nil {
		return nil, fmt.Errorf("outbox: list the log events of %s/%s: %w", aggregateType, aggregateID, err)
	}
	return es, nil
}

// PendingLogFilter selects the events [PendingLogEvents] returns.
type PendingLogFilter struct {
	// AggregateType and AggregateID restrict the list to one aggregate
	// type and to aggregates with that id. Optional: any.
	AggregateType, AggregateID string
	// After, when set, starts the list after this key: the next page of
	// a list whose last event had it ([LogEvent.Key]). Optional.
	After *LogKey
	// Limit is the most events returned. Required, positive.
	Limit int
}

// LogKey is a log entry's place in a list of the log, the keyset a next
// page starts after ([ListOptions.LogAfter]): an event's (Gate, Pos) in
// the pending and held lists, oldest first; a quarantined hold's
// (QuarantinedAt, AggregateType, AggregateID) in the quarantined list,
// oldest quarantine first.
type LogKey struct {
	Gate          int64     `json:"gate,omitempty"`
	Pos           int64     `json:"pos,omitempty"`
	QuarantinedAt time.Time `json:"quarantined_at,omitzero"`
	AggregateType string    `json:"aggregate_type,omitempty"`
	AggregateID   string    `json:"aggregate_id,omitempty"`
}

// Key is e's place in the log's pending and held lists.
func (e LogEvent) Key() LogKey { return LogKey{Gate: e.Gate, Pos: e.Pos} }

// Key is h's place in the log's quarantined list.
func (h LogHold) Key() LogKey {
	return LogKey{QuarantinedAt: h.QuarantinedAt, AggregateType: h.AggregateType, AggregateID: h.AggregateID}
}

// holdAfter reports whether h comes after k in the quarantined list's
// order (quarantined_at, aggregate_type, aggregate_id).
func holdAfter(h LogHold, k LogKey) bool {
	if c := h.QuarantinedAt.Compare(k.QuarantinedAt); c != 0 {
		return c > 0
	}
	if c := strings.Compare(h.AggregateType, k.AggregateType); c != 0 {
		return c > 0
	}
	return h.AggregateID > k.AggregateID
}

// PendingLogEvents lists the log's unpublished events that wait for no
// operator, oldest key first: those after their partition's cursor (State
// "pending") and those a hold that is not quarantined owns ("held": its
// worker publishes them after a backoff). What `outboxctl list --pending`
// adds to outbox_events' pending events. A quarantined hold's events are
// not listed ([QuarantinedLogHolds] has them), nor skipped ones. A long
// backlog costs no more than the answer: each partition is read up to
// Limit events after its cursor.
func PendingLogEvents(ctx context.Context, db outbox.LookupDB, f PendingLogFilter) ([]LogEvent, error) {
	es, _, err := pendingLogPage(ctx, db, f)
	return es, err
}

// pendingLogPage is [PendingLogEvents] that also returns the key of the
// last event it read, nil when it read fewer than f.Limit (the list ends
// there): an event it read may be left out, when a relay moved on between
// its two reads.
func pendingLogPage(ctx context.Context, db outbox.LookupDB, f PendingLogFilter) ([]LogEvent, *LogKey, error) {
	if f.Limit < 1 {
		return nil, nil, fmt.Errorf("outbox: pending log events: limit %d must be positive", f.Limit)
	}
	args := logOpPendingArgs{AggregateType: f.AggregateType, AggregateID: f.AggregateID, MaxEvents: f.Limit}
	if f.After != nil {
		args.AfterSet, args.AfterGate, args.AfterPos = true, f.After.Gate, f.After.Pos
	}
	rows, err := qLogOpPending.All(ctx, db, args)
	if err != nil {
		return nil, nil, fmt.Errorf("outbox: pending log events: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil, nil
	}
	var last *LogKey
	if len(rows) == f.Limit {
		r := rows[len(rows)-1]
		last = &LogKey{Gate: r.Gate, Pos: r.Pos}
	}
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.EventID
	}
	es, err := qLogOpEvents.All(ctx, db, logOpEventsArgs{EventIDs: ids})
	if err != nil {
		return nil, nil, fmt.Errorf("outbox: pending log events: %w", err)
	}
	// A relay may have moved on between the two reads: what it published
	// (or a hold quarantined) meanwhile is no longer pending.
	return slices.DeleteFunc(es, func(e LogEvent) bool { s := e.State(); return s != "pending" && s != "held" }), last, nil
}

// LogEventByID returns the log event eventID with its state, or an error
// wrapping [ErrEventNotFound], through the log's index on event_id.
func LogEventByID(ctx context.Context, db outbox.LookupDB, eventID uuid.UUID) (LogEvent, error) {
	return logEventByID(ctx, db, eventID)
}

func logEventByID(ctx context.Context, db namedsql.Querier, eventID uuid.UUID) (LogEvent, error) {
	es, err := qLogOpEvents.All(ctx, db, logOpEventsArgs{EventIDs: []uuid.UUID{eventID}})
	if err != nil {
		return LogEvent{}, fmt.Errorf("outbox: look up log event %s: %w", eventID, err)
	}
	if len(es) == 0 {
		return LogEvent{}, fmt.Errorf("%w: %s is not in the log", ErrEventNotFound, eventID)
	}
	return es[0], nil
}
