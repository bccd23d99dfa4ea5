package outboxops

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox"
)

// The log source (SourceLog) keeps its events in outbox_log, not in
// outbox_events, and an order in trouble under a hold. Every operator's
// function of this package acts on whichever table holds the event: an ID
// that outbox_events does not have is looked for in the log, where the
// log's own rules apply (only the head of a quarantined hold is retried or
// skipped, a replay delivers an order's tail through a hold). These are
// the log's types as the functions report them: [LogEvent], [LogHold],
// [HeldOrder], [LogStatusReport] (log_views.go, log_commands.go).

// StateHeld is a log event's state when its order's hold owns it and is
// not quarantined: the hold's worker publishes it (after a backoff, or as
// a replay). outbox_events has no such state.
const StateHeld EventState = "held"

// logEventInfo is a log event as the operator's functions report an event:
// the fields outbox_events' events share, its state in their words
// ([StateHeld] for a hold's), and Source "log".
func logEventInfo(e LogEvent) EventInfo {
	return EventInfo{
		ID: e.ID, AggregateType: e.AggregateType, AggregateID: e.AggregateID, Sequence: e.Sequence,
		Type: e.Type, SchemaVersion: e.SchemaVersion, OccurredAt: e.OccurredAt, Attempts: e.Attempts,
		LastError: e.LastError, QuarantinedAt: e.QuarantinedAt, SkippedAt: e.SkippedAt,
		SkippedBy: deref(e.SkippedBy), SkipReason: deref(e.SkipReason),
		State: EventState(e.State()), Source: SourceLog,
	}
}

// stateError is a refusal of the log's for an event's state: it wraps
// [ErrEventState] as outbox_events' refusals do, and the log's own error
// (ErrNotLogHoldHead, ErrNoQuarantinedHold), whose message
// it keeps.
type stateError struct{ err error }

func (e stateError) Error() string   { return e.err.Error() }
func (e stateError) Unwrap() []error { return []error{ErrEventState, e.err} }

// logStateError wraps err in a stateError when it is a refusal for the
// hold's state.
func logStateError(err error) error {
	if errors.Is(err, ErrNotLogHoldHead) || errors.Is(err, ErrNoQuarantinedHold) || errors.Is(err, ErrLogOrderHeld) {
		return stateError{err}
	}
	return err
}

// logEventAfter reads the log event id back in tx after a change of its
// hold, for [Change.After].
func logEventAfter(ctx context.Context, tx pgx.Tx, before LogEvent) (EventInfo, error) {
	after, err := LogEventByID(ctx, tx, before.ID)
	if err != nil {
		return EventInfo{}, fmt.Errorf("outbox: reading log event %s back: %w", before.ID, err)
	}
	return logEventInfo(after), nil
}

// notInLog is the error for an ID neither outbox_events nor the log has:
// notFound, outbox_events' answer, said of the log too.
func notInLog(notFound error) error {
	return fmt.Errorf("%w (nor is it in the log)", notFound)
}

// findLogEvent is the log event id, or notInLog(notFound) when the log
// does not have it either.
func findLogEvent(ctx context.Context, db outbox.LookupDB, id uuid.UUID, notFound error) (LogEvent, error) {
	e, err := LogEventByID(ctx, db, id)
	if errors.Is(err, outbox.ErrEventNotFound) {
		return LogEvent{}, notInLog(notFound)
	}
	return e, err
}
