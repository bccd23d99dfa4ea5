package outboxops

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Skip records an operator's decision to give up on a quarantined event:
// skipped_at, skipped_by (actor) and skip_reason are written, the event is
// never published, and its aggregate's later events flow again (relays are
// woken) once a relay has handed the skip, as a tombstone, to the sinks that
// take one (outbox.SkipPublisher, e.g. JetStream's; skip_published_at), so
// that the downstream consumers see the skip in its place rather than a
// gap. reason and actor are mandatory: a skip loses a business event, so
// the record says who decided it and why.
//
// Only a quarantined event can be skipped; any other state is refused with an
// error wrapping [ErrEventState], an unknown ID with outbox.ErrEventNotFound.
func Skip(ctx context.Context, db DB, eventID uuid.UUID, reason, actor string) (Change, error) {
	var c Change
	err := inTx(ctx, db, func(tx pgx.Tx) error {
		var err error
		c, err = SkipTx(ctx, tx, eventID, reason, actor)
		return err
	})
	return c, err
}

// SkipTx is [Skip] inside the caller's transaction: the event stays locked
// and the relays are woken when tx commits. It is for a skip that must
// commit together with what it means to the event's consumers, or not at
// all: a consumer that applies an aggregate's events strictly in sequence
// must account for the skipped one in the same transaction, or it waits
// for it forever (`outboxctl skip` settles the order app's projection so,
// with orders.SettleSkippedTx). The returned Change names the aggregate and
// sequence to settle.
func SkipTx(ctx context.Context, tx pgx.Tx, eventID uuid.UUID, reason, actor string) (Change, error) {
	reason, actor = strings.TrimSpace(reason), strings.TrimSpace(actor)
	switch {
	case reason == "":
		return Change{}, fmt.Errorf("outbox: skip %s: a reason is mandatory: say why this event may be given up (it is recorded in skip_reason)", eventID)
	case actor == "":
		return Change{}, fmt.Errorf("outbox: skip %s: an actor is mandatory: who decided the skip (recorded in skipped_by)", eventID)
	}
	before, err := lockEvent(ctx, tx, eventID)
	if err != nil {
		return Change{}, fmt.Errorf("outbox: skip: %w", err)
	}
	if before.State != StateQuarantined {
		hint := "only a quarantined event can be skipped"
		switch before.State {
		case StateSkipped:
			hint = fmt.Sprintf("it was already skipped by %s (%q)", before.SkippedBy, before.SkipReason)
		case StatePublished:
			hint = "it was published; there is nothing to give up"
		case StateBackingOff, StatePending, StateBlocked, StateInFlight:
			hint = "only a quarantined event can be skipped; this one is still being retried (wait until it is quarantined, or fix what it needs and `outboxctl retry` it)"
		}
		return Change{}, fmt.Errorf("outbox: skip %s: %w: it is %s, not quarantined; %s", eventID, ErrEventState, before.State, hint)
	}
	if _, err := qOpsSkip.Exec(ctx, tx, skipArgs{EventID: eventID, SkippedBy: actor, SkipReason: reason}); err != nil {
		return Change{}, fmt.Errorf("outbox: skip %s: %w", eventID, err)
	}
	return finishChange(ctx, tx, before)
}
