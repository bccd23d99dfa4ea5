package outboxops

import (
	"time"

	"github.com/google/uuid"
)

// EventState is an event's place in its life, as operators see it.
type EventState string

// The states of [EventInfo.State].
const (
	// StatePending: waiting to be claimed (available now, not held back).
	StatePending EventState = "pending"
	// StateBlocked: an unpublished, unskipped predecessor of its aggregate
	// (pending, backing off or quarantined) holds it back.
	StateBlocked EventState = "blocked"
	// StateInFlight: a relay holds a live lease on it and is publishing it.
	StateInFlight EventState = "in_flight"
	// StateBackingOff: a publish failed; it is retried at AvailableAt.
	StateBackingOff EventState = "backing_off"
	// StateQuarantined: it failed permanently or used up its attempts; it
	// waits for `outboxctl retry` or `outboxctl skip` and holds back its
	// aggregate's later events.
	StateQuarantined EventState = "quarantined"
	// StateSkipped: an operator gave it up; it is never published.
	StateSkipped EventState = "skipped"
	// StatePublished: the publisher acknowledged it (in the log: its
	// partition's cursor passed it and no hold owns it).
	StatePublished EventState = "published"
)

// EventInfo is one outbox row with its relay bookkeeping, as [List] and the
// operator's commands report it.
type EventInfo struct {
	ID                uuid.UUID  `json:"event_id"`
	AggregateType     string     `json:"aggregate_type"`
	AggregateID       string     `json:"aggregate_id"`
	Sequence          int64      `json:"aggregate_sequence"`
	Type              string     `json:"event_type"`
	SchemaVersion     int        `json:"schema_version"`
	OccurredAt        time.Time  `json:"occurred_at"`
	AvailableAt       time.Time  `json:"available_at"`
	ClaimedBy         string     `json:"claimed_by,omitempty"`
	ClaimUntil        *time.Time `json:"claim_until,omitempty"`
	PublishedAt       *time.Time `json:"published_at,omitempty"`
	Attempts          int        `json:"attempt_count"`
	LastError         string     `json:"last_error,omitempty"`
	QuarantinedAt     *time.Time `json:"quarantined_at,omitempty"`
	SkippedAt         *time.Time `json:"skipped_at,omitempty"`
	SkippedBy         string     `json:"skipped_by,omitempty"`
	SkipReason        string     `json:"skip_reason,omitempty"`
	ReplayRequestedAt *time.Time `json:"replay_requested_at,omitempty"`
	// State is derived from the columns above at the database's clock.
	State EventState `json:"state"`
	// Source is [SourceLog] for an event of the log (outbox_log), whose
	// place in the log and hold [Change.Log] has; empty for an event of
	// outbox_events, which the poll and cdc sources share.
	Source string `json:"source,omitempty"`
}

// eventInfo is a row of OpsList, OpsLockEvent or OpsRetryQuarantinedPlan
// as operators see it: its state derived from the event's columns, the
// database's clock (db_now) and whether a predecessor blocks it (blocked).
func (r eventInfoRow) eventInfo() EventInfo {
	e := EventInfo{
		ID:                r.EventID,
		AggregateType:     r.AggregateType,
		AggregateID:       r.AggregateID,
		Sequence:          r.AggregateSequence,
		Type:              r.EventType,
		SchemaVersion:     r.SchemaVersion,
		OccurredAt:        r.OccurredAt,
		AvailableAt:       r.AvailableAt,
		ClaimedBy:         deref(r.ClaimedBy),
		ClaimUntil:        r.ClaimUntil,
		PublishedAt:       r.PublishedAt,
		Attempts:          r.AttemptCount,
		LastError:         deref(r.LastError),
		QuarantinedAt:     r.QuarantinedAt,
		SkippedAt:         r.SkippedAt,
		SkippedBy:         deref(r.SkippedBy),
		SkipReason:        deref(r.SkipReason),
		ReplayRequestedAt: r.ReplayRequestedAt,
	}
	e.State = e.stateAt(r.DBNow, r.Blocked)
	return e
}

// stateAt derives the state; the order of the cases is the order of
// precedence (a quarantined event is also unpublished, and so on).
func (e *EventInfo) stateAt(now time.Time, blocked bool) EventState {
	switch {
	case e.PublishedAt != nil:
		return StatePublished
	case e.SkippedAt != nil:
		return StateSkipped
	case e.QuarantinedAt != nil:
		return StateQuarantined
	case e.ClaimUntil != nil && e.ClaimUntil.After(now):
		return StateInFlight
	case blocked:
		return StateBlocked
	case e.Attempts > 0 && e.AvailableAt.After(now):
		return StateBackingOff
	default:
		return StatePending
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
