package outboxops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox"
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
//
// An event of the log source (outbox_log) is skipped with the log's rules:
// only the head of a quarantined hold, the event the hold is stuck on, may
// be skipped (any other is refused with an error wrapping ErrEventState and
// ErrNotLogHoldHead); it is recorded skipped and never published,
// the hold hands its tombstone in its place and goes on with the order's
// next event. The head of a replay's hold that was delivered before the
// replay is a redelivery ([Change.Log].Redelivery): its skip gives up that
// redelivery only, and the event stays published.
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
// sequence to settle; for the log's redelivery of an event delivered
// before (Change.Log.Redelivery) there is nothing to settle: its consumers
// had it.
func SkipTx(ctx context.Context, tx pgx.Tx, eventID uuid.UUID, reason, actor string) (Change, error) {
	reason, actor = strings.TrimSpace(reason), strings.TrimSpace(actor)
	switch {
	case reason == "":
		return Change{}, fmt.Errorf("outbox: skip %s: a reason is mandatory: say why this event may be given up (it is recorded in skip_reason)", eventID)
	case actor == "":
		return Change{}, fmt.Errorf("outbox: skip %s: an actor is mandatory: who decided the skip (recorded in skipped_by)", eventID)
	}
	before, err := lockEvent(ctx, tx, eventID)
	if errors.Is(err, outbox.ErrEventNotFound) {
		return skipLog(ctx, tx, eventID, reason, actor, fmt.Errorf("outbox: skip: %w", err))
	}
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

// skipLog is SkipTx of an event outbox_events does not have (notFound says
// so): the log's, skipped as the head of its order's quarantined hold
// (SkipLogEventTx), under the hold's lock.
func skipLog(ctx context.Context, tx pgx.Tx, eventID uuid.UUID, reason, actor string, notFound error) (Change, error) {
	e, err := SkipLogEventTx(ctx, tx, eventID, actor, reason)
	if errors.Is(err, outbox.ErrEventNotFound) {
		return Change{}, notInLog(notFound)
	}
	if err != nil {
		return Change{}, logStateError(err)
	}
	after, err := logEventAfter(ctx, tx, e)
	if err != nil {
		return Change{}, err
	}
	return Change{Before: logEventInfo(e), After: after, Log: &e}, nil
}
