package outboxtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the helpers read and write outbox rows through: a
// *pgxpool.Pool, a *pgx.Conn, or a pgx.Tx (to look inside a transaction
// before it commits).
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Event is one outbox row as a test sees it: the event as it was enqueued
// and the relay's bookkeeping of it. A NULL text column reads as "".
type Event struct {
	ID            uuid.UUID       `db:"event_id"`
	AggregateType string          `db:"aggregate_type"`
	AggregateID   string          `db:"aggregate_id"`
	Sequence      int64           `db:"aggregate_sequence"`
	Type          string          `db:"event_type"`
	SchemaVersion int             `db:"schema_version"`
	Payload       json.RawMessage `db:"payload"`
	// OccurredAt is the enqueuing transaction's clock.
	OccurredAt time.Time `db:"occurred_at"`
	// AvailableAt is when the event may be claimed (later after a failure).
	AvailableAt time.Time `db:"available_at"`
	// ClaimedBy is the relay that holds or last held the event's lease; it
	// stays after the publish, as the record of who published it.
	ClaimedBy  string     `db:"claimed_by"`
	ClaimUntil *time.Time `db:"claim_until"`
	// PublishedAt is nil until the publisher acknowledged the event.
	PublishedAt *time.Time `db:"published_at"`
	Attempts    int        `db:"attempt_count"`
	LastError   string     `db:"last_error"`
	// QuarantinedAt is set once the relay gave up on the event.
	QuarantinedAt *time.Time `db:"quarantined_at"`
	// SkippedAt, SkippedBy and SkipReason record an operator's skip.
	SkippedAt  *time.Time `db:"skipped_at"`
	SkippedBy  string     `db:"skipped_by"`
	SkipReason string     `db:"skip_reason"`
	// ReplayRequestedAt is set while an operator's replay waits to be
	// delivered.
	ReplayRequestedAt *time.Time `db:"replay_requested_at"`
}

// String names the event for a failure message.
func (e Event) String() string {
	var state []string
	if e.PublishedAt != nil {
		state = append(state, "published")
	}
	if e.QuarantinedAt != nil {
		state = append(state, "quarantined")
	}
	if e.SkippedAt != nil {
		state = append(state, "skipped")
	}
	if len(state) == 0 {
		state = append(state, "unpublished")
	}
	return fmt.Sprintf("%s %s %s/%s seq=%d (%s)", e.ID, e.Type, e.AggregateType, e.AggregateID, e.Sequence, strings.Join(state, ", "))
}

// Match selects events. Each field left zero matches every value, so
// Match{} selects every event and Match{AggregateType: "order", AggregateID:
// id} one aggregate's.
type Match struct {
	// ID is the event's ID.
	ID uuid.UUID
	// AggregateType is the kind of aggregate, e.g. "order".
	AggregateType string
	// AggregateID identifies the aggregate within its type.
	AggregateID string
	// Type is the event type, e.g. "OrderCreated".
	Type string
}

// String says what m selects, for a failure message.
func (m Match) String() string {
	var parts []string
	if m.ID != uuid.Nil {
		parts = append(parts, "id "+m.ID.String())
	}
	if m.AggregateType != "" || m.AggregateID != "" {
		parts = append(parts, "aggregate "+or(m.AggregateType, "*")+"/"+or(m.AggregateID, "*"))
	}
	if m.Type != "" {
		parts = append(parts, "type "+m.Type)
	}
	if len(parts) == 0 {
		return "any event"
	}
	return strings.Join(parts, ", ")
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
