package outboxops

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/namedsql"
)

// The operator's commands on the log source's holds (model/log.pml's
// Operator, O1 and O2). Each is one transaction that first locks the cursor
// row of the hold's partition, as every change of a partition's holds does
// (the relay's own changes in package outbox too: the lock is the protocol's
// seam). Retry, Skip and Replay call them for the log's events
// (log_views.go has the operator's views).

// HeldOrder is a hold of the log source: an order in trouble, whose events
// from (FromGate, FromPos) on the partition's hold worker publishes in order
// while the reader skips them.
type HeldOrder struct {
	AggregateType string `db:"aggregate_type"`
	AggregateID   string `db:"aggregate_id"`
	Partition     int    `db:"partition"`
	FromGate      int64  `db:"from_gate"`
	FromPos       int64  `db:"from_pos"`
	// Attempts are its head's attempts so far (OUTFLOW_MAX_ATTEMPTS).
	Attempts int `db:"attempts"`
	// Quarantined holds wait for an operator: RetryLogHold or SkipLogHold.
	Quarantined bool   `db:"quarantined"`
	LastError   string `db:"last_error"`
	// Replay: an operator's replay made it (ReplayLogOrder).
	Replay bool `db:"replay"`
}

// ErrLogOrderHeld is returned by ReplayLogOrder for an order under a hold:
// its events are not all delivered yet; retry or skip the hold first.
var ErrLogOrderHeld = errors.New("outbox: the order is under a hold")

// ErrNoLogEvent is returned by ReplayLogOrder when the order has no event
// of that sequence in the log.
var ErrNoLogEvent = errors.New("outbox: no such event in the log")

// ErrLogRangeRetiring is returned by ReplayLogOrder when a range of the log
// that retention is dropping (or dropped) ends after the replay's first
// event: the order's later events, at later positions, may be in it, so
// the replay would deliver part of the order only.
var ErrLogRangeRetiring = errors.New("outbox: the replay reaches a range of the log that retention is dropping")

// ErrNoQuarantinedHold is returned by RetryLogHold and SkipLogHold when
// the order has no quarantined hold.
var ErrNoQuarantinedHold = errors.New("outbox: the order has no quarantined hold")

// LogHolds lists every hold of the log source, by partition and order.
func LogHolds(ctx context.Context, pool *pgxpool.Pool) ([]HeldOrder, error) {
	hs, err := qLogHolds.All(ctx, pool, namedsql.NoArgs{})
	if err != nil {
		return nil, fmt.Errorf("outbox: list log holds: %w", err)
	}
	return hs, nil
}

// RetryLogHold takes the quarantined hold of aggregateType/aggregateID out
// of quarantine with its attempts back to 0 (O1): the hold worker publishes
// its head again at once. ErrNoQuarantinedHold when there is none.
func RetryLogHold(ctx context.Context, db DB, aggregateType, aggregateID string) error {
	return retryLogHold(ctx, db, aggregateType, aggregateID)
}

// retryLogHold is RetryLogHold on db.
func retryLogHold(ctx context.Context, db beginner, aggregateType, aggregateID string) error {
	agg := aggregateArgs{AggregateType: aggregateType, AggregateID: aggregateID}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := qLogOpLock.All(ctx, tx, agg); err != nil {
			return err
		}
		rows, err := qLogOpRetry.All(ctx, tx, agg)
		if err == nil && len(rows) == 0 {
			err = ErrNoQuarantinedHold
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("outbox: retry the log hold of %s/%s: %w", aggregateType, aggregateID, err)
	}
	return nil
}

// SkipLogHold records the head of the quarantined hold of
// aggregateType/aggregateID skipped by skippedBy for reason, so it is never
// published (a replay of the order hands only its tombstone again), and
// takes the hold out of quarantine (O2): the hold worker hands the skip's
// tombstone ([SkipPublisher]) in the event's place, then goes on with the
// order's next event, or releases the hold. The head of a replay's hold that was
// delivered before the replay ([LogEvent].Redelivery) is not recorded
// skipped: only its redelivery is given up, and it stays published. It
// returns the head's ID (uuid.Nil: the hold had no head left).
// ErrNoQuarantinedHold when there is none.
func SkipLogHold(ctx context.Context, pool *pgxpool.Pool, aggregateType, aggregateID, skippedBy, reason string) (uuid.UUID, error) {
	sk, err := skipLogHold(ctx, pool, aggregateType, aggregateID, uuid.Nil, skippedBy, reason)
	return sk.EventID, err
}

// logSkip is what a skip gave up: the head (uuid.Nil: none), and whether
// that was only its redelivery by a replay.
type logSkip struct {
	EventID    uuid.UUID
	Redelivery bool
}

// ErrNotLogHoldHead is returned by SkipLogEvent for an event that is not
// the head of a quarantined hold: only the event a quarantined hold is
// stuck on may be skipped.
var ErrNotLogHoldHead = errors.New("outbox: the event is not the head of a quarantined hold")

// SkipLogEvent is [SkipLogHold] of the hold whose head is the log event
// eventID, checked under the hold's lock, so the skip gives up exactly the
// event the operator named. Errors wrap [ErrEventNotFound] (not in the
// log), [ErrNotLogHoldHead] or [ErrNoQuarantinedHold].
func SkipLogEvent(ctx context.Context, pool *pgxpool.Pool, eventID uuid.UUID, skippedBy, reason string) (LogEvent, error) {
	var e LogEvent
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		e, err = SkipLogEventTx(ctx, tx, eventID, skippedBy, reason)
		return err
	})
	return e, err
}

// SkipLogEventTx is [SkipLogEvent] in the caller's transaction tx (a
// savepoint of it), so that what the skip means to the event's consumers
// (an order's projection settling the skipped sequence) commits with it.
// It returns the event as it was before the skip; Redelivery says the skip
// gave up only a replay's redelivery of it (nothing for its consumers to
// settle: they had it).
func SkipLogEventTx(ctx context.Context, tx pgx.Tx, eventID uuid.UUID, skippedBy, reason string) (LogEvent, error) {
	e, err := logEventByID(ctx, tx, eventID)
	if err != nil {
		return LogEvent{}, err
	}
	sk, err := skipLogHold(ctx, tx, e.AggregateType, e.AggregateID, eventID, skippedBy, reason)
	if err != nil {
		return e, err
	}
	e.Redelivery = sk.Redelivery
	return e, nil
}

// skipLogHold is SkipLogHold on db (a pool, or a transaction whose
// savepoint it uses); when head is not uuid.Nil, only if the hold's head
// is that event.
func skipLogHold(ctx context.Context, db beginner, aggregateType, aggregateID string, head uuid.UUID, skippedBy, reason string) (logSkip, error) {
	if skippedBy == "" {
		return logSkip{}, errors.New("outbox: SkipLogHold needs who skips (skippedBy)")
	}
	agg := aggregateArgs{AggregateType: aggregateType, AggregateID: aggregateID}
	var skipped logSkip
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		cur, err := qLogOpLock.All(ctx, tx, agg)
		if err != nil {
			return err
		}
		if len(cur) == 0 {
			return errors.New("the partition's cursor row is missing (is the outbox schema migrated?)")
		}
		if head != uuid.Nil {
			// Under the cursor row's lock the holds and the cursor stand
			// still, so the head read here is the one the skip gives up.
			es, err := qLogOpEvents.All(ctx, tx, logOpEventsArgs{AggregateType: aggregateType, AggregateID: aggregateID})
			if err != nil {
				return err
			}
			for _, e := range es {
				if e.ID == head && !(e.Head && e.QuarantinedAt != nil) {
					return fmt.Errorf("%w: %s is %s", ErrNotLogHoldHead, head, e.State())
				}
			}
		}
		rows, err := qLogOpSkip.All(ctx, tx, logOpSkipArgs{
			AggregateType: aggregateType, AggregateID: aggregateID, Gate: cur[0].Gate, Pos: cur[0].Pos,
			SkippedBy: skippedBy, Reason: reason,
		})
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return ErrNoQuarantinedHold
		}
		if rows[0].EventID != nil {
			skipped = logSkip{EventID: *rows[0].EventID, Redelivery: rows[0].Redelivery}
		}
		return nil
	})
	if err != nil {
		return logSkip{}, fmt.Errorf("outbox: skip the head of the log hold of %s/%s: %w", aggregateType, aggregateID, err)
	}
	return skipped, nil
}

// ReplayLogOrder delivers the events of aggregateType/aggregateID again
// from its event of sequence fromSequence on (O3): a hold from that event
// (no later than just after its partition's cursor), whose hold worker
// publishes the order's events in order, those already delivered marked
// Event.Replay, and the partition's epoch armed in the same transaction, so
// no reader advances on a view without the hold. Its first publish waits
// until the partition's reader no longer works on a batch it read before
// the replay (model/README.md, what the model found, 5), so the order never
// has two publishes at once. The events an operator skipped are handed as
// their tombstones only: never published. ErrLogOrderHeld while the order is under a
// hold, ErrNoLogEvent when there is no such event, ErrLogRangeRetiring when
// a range retention is dropping (or dropped) ends after the event's
// position: the order's later events may be in it, so the replay would
// deliver part of them (retention marks a range under a lock this waits
// for, and no range retires while the replay's hold owns its events). The
// replay horizon (outboxops.Replay's check) does not apply here.
func ReplayLogOrder(ctx context.Context, db DB, aggregateType, aggregateID string, fromSequence int64) error {
	agg := aggregateArgs{AggregateType: aggregateType, AggregateID: aggregateID}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		cur, err := qLogOpReplayLock.All(ctx, tx, agg)
		if err != nil {
			return err
		}
		if len(cur) == 0 {
			return errors.New("the partition's cursor row is missing (is the outbox schema migrated?)")
		}
		held, err := qLogOpHeld.Value(ctx, tx, agg)
		if err != nil {
			return err
		}
		if held {
			return ErrLogOrderHeld
		}
		// Under the cursor row's lock, after retention's lock: a range it
		// marked retiring is seen here (model/log.pml's REPLAYABLE).
		es, err := qLogOpEvents.All(ctx, tx, logOpEventsArgs{AggregateType: aggregateType, AggregateID: aggregateID})
		if err != nil {
			return err
		}
		for _, e := range es {
			if e.Sequence == fromSequence && e.Retiring {
				return fmt.Errorf("%w: a range ends after sequence %d's position (%d), and the order's later events may be in it; nothing was replayed: replay a window that starts after the log's retention horizon (outboxctl status, log ranges)",
					ErrLogRangeRetiring, fromSequence, e.Pos)
			}
		}
		made, err := qLogOpReplay.All(ctx, tx, logOpReplayArgs{
			AggregateType: aggregateType, AggregateID: aggregateID, Sequence: fromSequence, Gate: cur[0].Gate, Pos: cur[0].Pos,
		})
		if err == nil && len(made) == 0 {
			err = ErrNoLogEvent
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("outbox: replay %s/%s from sequence %d: %w", aggregateType, aggregateID, fromSequence, err)
	}
	return nil
}
