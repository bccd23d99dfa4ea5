package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Change is what an operator's command did to one event: the event before
// and after, read in the command's transaction.
type Change struct {
	Before EventInfo
	After  EventInfo
}

// Retry makes a quarantined or backing-off event available now: its attempts
// are reset (a fresh OUTFLOW_MAX_ATTEMPTS budget), its quarantine is cleared,
// and relays are woken. Its last_error is kept. A pending event gets the same
// treatment (harmless); an event a relay is publishing right now, a published
// or skipped one is refused with an error wrapping [ErrEventState], an
// unknown ID with [ErrEventNotFound].
//
// A retried event that still cannot be published is quarantined again; its
// aggregate's later events keep waiting until it is published or skipped.
func Retry(ctx context.Context, db DB, eventID uuid.UUID) (Change, error) {
	var c Change
	err := inTx(ctx, db, func(tx pgx.Tx) error {
		var err error
		c, err = RetryTx(ctx, tx, eventID)
		return err
	})
	return c, err
}

// RetryTx is [Retry] inside the caller's transaction: the event stays locked
// and the relays are woken when tx commits.
func RetryTx(ctx context.Context, tx pgx.Tx, eventID uuid.UUID) (Change, error) {
	before, err := lockEvent(ctx, tx, eventID)
	if err != nil {
		return Change{}, fmt.Errorf("outbox: retry: %w", err)
	}
	switch before.State {
	case StatePublished:
		return Change{}, fmt.Errorf("outbox: retry %s: %w: it was published at %s; to deliver it again use replay (outboxctl replay --from ... --to ... --aggregate %s)",
			eventID, ErrEventState, before.PublishedAt.Format(time.RFC3339), before.AggregateID)
	case StateSkipped:
		return Change{}, fmt.Errorf("outbox: retry %s: %w: it was skipped by %s at %s (%q); a skip is final, since later events of its aggregate may have been published since",
			eventID, ErrEventState, before.SkippedBy, before.SkippedAt.Format(time.RFC3339), before.SkipReason)
	case StateInFlight:
		return Change{}, fmt.Errorf("outbox: retry %s: %w: relay %s is publishing it right now (lease until %s); wait and look again",
			eventID, ErrEventState, before.ClaimedBy, before.ClaimUntil.Format(time.RFC3339))
	}
	if _, err := qOpsRetry.exec(ctx, tx, eventIDArgs{EventID: eventID}); err != nil {
		return Change{}, fmt.Errorf("outbox: retry %s: %w", eventID, err)
	}
	return finishChange(ctx, tx, before)
}

// finishChange wakes the relays at commit and reads the event after the
// change.
func finishChange(ctx context.Context, tx pgx.Tx, before EventInfo) (Change, error) {
	if _, err := qOpsNotify.exec(ctx, tx, noArgs{}); err != nil {
		return Change{}, fmt.Errorf("outbox: notify relays: %w", err)
	}
	after, err := lockEvent(ctx, tx, before.ID)
	if err != nil {
		return Change{}, fmt.Errorf("outbox: reading event %s back: %w", before.ID, err)
	}
	return Change{Before: before, After: after}, nil
}
