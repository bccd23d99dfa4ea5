package outboxtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
)

// A Change is bookkeeping [Force] writes onto events, the way the relay or
// an operator would have written it. Times are offsets from the database's
// clock, so a test does not depend on its own clock agreeing with the
// server's.
type Change struct {
	what  string
	apply func(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) error
}

// Force writes changes, in the order given and in one transaction, onto
// every event m selects, and returns those events as they are afterwards.
// It fails t when m selects no event. It is for a test of code that reads
// such a state (an operator's command, a status page, retention cleanup):
// it bypasses the relay and its rules, and sends no NOTIFY, so it never
// proves the relay would get there. A test of the relay runs one instead
// ([RunRelay]).
func Force(t testing.TB, db DB, m Match, changes ...Change) []Event {
	t.Helper()
	events := Events(t, db, m)
	if len(events) == 0 {
		require.FailNow(t, "outboxtest: Force: no event matches "+m.String())
	}
	ids := make([]uuid.UUID, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		for _, c := range changes {
			if err := c.apply(ctx, tx, ids); err != nil {
				return fmt.Errorf("%s: %w", c.what, err)
			}
		}
		return nil
	})
	require.NoError(t, err, "outboxtest: Force on the events matching %s", m)
	return Events(t, db, m)
}

// SetOccurred: the event was enqueued ago before now (occurred_at), e.g.
// to age it past a retention or a pending-age alert.
func SetOccurred(ago time.Duration) Change {
	return Change{what: "SetOccurred", apply: func(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) error {
		_, err := qSetOccurred.Exec(ctx, tx, agoArgs{EventIDs: ids, AgoMS: ago.Milliseconds()})
		return err
	}}
}

// SetPublished: the relay marked the event published ago before now; its
// lease ends and a replay request is fulfilled, as the relay's mark does.
func SetPublished(ago time.Duration) Change {
	return Change{what: "SetPublished", apply: func(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) error {
		_, err := qSetPublished.Exec(ctx, tx, agoArgs{EventIDs: ids, AgoMS: ago.Milliseconds()})
		return err
	}}
}

// SetQuarantined: the relay gave up on the event ago before now, after
// [outbox.MaxAttemptsDefault] attempts, the last failing with lastError
// ("" leaves last_error NULL); its lease ends.
func SetQuarantined(ago time.Duration, lastError string) Change {
	return Change{what: "SetQuarantined", apply: func(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) error {
		_, err := qSetQuarantined.Exec(ctx, tx, quarantinedArgs{EventIDs: ids, AgoMS: ago.Milliseconds(),
			Attempts: outbox.MaxAttemptsDefault, LastError: lastError})
		return err
	}}
}

// SetFailed: attempts publishes failed, the last with lastError ("" leaves
// last_error NULL), and the relay retries in retryIn (available_at); its
// lease ends.
func SetFailed(attempts int, lastError string, retryIn time.Duration) Change {
	return Change{what: "SetFailed", apply: func(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) error {
		_, err := qSetFailed.Exec(ctx, tx, failedArgs{EventIDs: ids, Attempts: attempts, LastError: lastError,
			RetryInMS: retryIn.Milliseconds()})
		return err
	}}
}

// SetLeased: the relay called owner claimed the event, with a lease that
// ends in remaining, counting one more attempt as a claim does.
func SetLeased(owner string, remaining time.Duration) Change {
	return Change{what: "SetLeased", apply: func(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) error {
		_, err := qSetLeased.Exec(ctx, tx, leasedArgs{EventIDs: ids, Owner: owner, LeaseMS: remaining.Milliseconds()})
		return err
	}}
}

// SetSkipped: an operator (by) skipped the event ago before now, for reason.
func SetSkipped(ago time.Duration, by, reason string) Change {
	return Change{what: "SetSkipped", apply: func(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) error {
		_, err := qSetSkipped.Exec(ctx, tx, skippedArgs{EventIDs: ids, AgoMS: ago.Milliseconds(), SkippedBy: by, SkipReason: reason})
		return err
	}}
}

// SetReplayRequested: an operator replayed the event, which waits to be
// delivered again: unpublished, available now, its attempts reset, flagged
// as a replay.
func SetReplayRequested() Change {
	return Change{what: "SetReplayRequested", apply: func(ctx context.Context, tx pgx.Tx, ids []uuid.UUID) error {
		_, err := qSetReplayRequested.Exec(ctx, tx, idsArgs{EventIDs: ids})
		return err
	}}
}

// DeleteEvents deletes the events m selects, published or not, and returns
// how many it deleted: the state retention cleanup leaves once events are
// published and older than the retention. It is for a test of code that
// must keep working after cleanup (a reader that must not rely on the
// outbox's rows lasting), or that takes a probe event of its own out again;
// outboxops.Cleanup's own rules are its tests'.
func DeleteEvents(t testing.TB, db DB, m Match) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	tag, err := qDeleteEvents.Exec(ctx, db, m.args())
	require.NoError(t, err, "outboxtest: delete the events matching %s", m)
	return tag.RowsAffected()
}
