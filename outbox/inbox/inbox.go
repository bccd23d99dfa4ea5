package inbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/outflow/outflow/outbox/promreg"
)

// DuplicatesMetric is the name of the counter of duplicate deliveries, with
// the label [ConsumerLabel].
const DuplicatesMetric = "inbox_duplicates_total"

// ConsumerLabel is the label of [DuplicatesMetric]: the consumer's name.
const ConsumerLabel = "consumer"

// DB is what the inbox runs its one statement on, the smallest part of pgx
// that can: the caller's transaction (a pgx.Tx) for a [Inbox.Record] whose
// effect is in the database; any handle (*pgxpool.Pool, *pgx.Conn) for
// [Inbox.Seen] and for the Record that follows an effect outside it.
type DB interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Inbox records which events each consumer has processed and counts the
// duplicate deliveries it finds. It holds no state but its metric: one Inbox
// serves every consumer of a process, concurrently.
type Inbox struct {
	duplicates *prometheus.CounterVec
}

// New returns an Inbox whose counter [DuplicatesMetric]{[ConsumerLabel]} is
// registered on reg. With a nil reg the counter is kept but registered
// nowhere (a test that does not look at metrics). A second Inbox on the same
// reg shares the first one's counter instead of failing; any other collector
// of that name on reg is an error.
func New(reg prometheus.Registerer) (*Inbox, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: DuplicatesMetric,
		Help: "Event deliveries the inbox (processed_events) acknowledged without effect, by consumer.",
	}, []string{ConsumerLabel})
	c, err := promreg.Register(reg, c)
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	return &Inbox{duplicates: c}, nil
}

// Record records, in tx, that consumer processed the event eventID, and
// reports whether this is the first time. Call it in the transaction that
// applies the consumer's effect, before the effect:
//
//   - first: apply the effect in tx and commit; the row commits with it, and
//     a rollback takes it back, so a failed attempt is judged again on
//     redelivery;
//   - not first: the effect was applied by an earlier delivery whose
//     transaction committed; acknowledge without effect. The duplicate is
//     counted, by consumer.
//
// Two concurrent deliveries cannot both be first: the second one's insert
// waits on the row's key until the first transaction ends. consumer names
// the effect (one name per effect, stable forever: it is part of the key);
// it must not be empty.
func (ib *Inbox) Record(ctx context.Context, tx DB, consumer string, eventID uuid.UUID) (first bool, err error) {
	if err := ib.check(consumer, eventID); err != nil {
		return false, err
	}
	_, err = qRecord.Value(ctx, tx, keyArgs{ConsumerName: consumer, EventID: eventID})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, pgx.ErrNoRows):
		ib.duplicates.WithLabelValues(consumer).Inc()
		return false, nil
	default:
		return false, fmt.Errorf("inbox: record event %s for consumer %s: %w", eventID, consumer, err)
	}
}

// Seen reports whether consumer has recorded the event eventID, and counts a
// true answer as a duplicate. It is the first half of a consumer whose effect
// is outside the database and cannot join a transaction (an email sent
// through a provider's API):
//
//  1. Seen: if true, acknowledge without effect;
//  2. apply the effect, made idempotent on its own side too (the provider's
//     idempotency key derived from the event ID), because a crash before step
//     3 leaves no row and the retry applies it again;
//  3. [Inbox.Record] once the effect is accepted. Its answer may be "not
//     first" when a concurrent attempt recorded it meanwhile; the effect's
//     own idempotency kept that single.
//
// A consumer whose effect is in the database needs only Record.
func (ib *Inbox) Seen(ctx context.Context, db DB, consumer string, eventID uuid.UUID) (bool, error) {
	if err := ib.check(consumer, eventID); err != nil {
		return false, err
	}
	seen, err := qSeen.Value(ctx, db, keyArgs{ConsumerName: consumer, EventID: eventID})
	if err != nil {
		return false, fmt.Errorf("inbox: read event %s of consumer %s: %w", eventID, consumer, err)
	}
	if seen {
		ib.duplicates.WithLabelValues(consumer).Inc()
	}
	return seen, nil
}

// check refuses a call that could only record a wrong row.
func (ib *Inbox) check(consumer string, eventID uuid.UUID) error {
	switch {
	case ib == nil:
		return errors.New("inbox: nil *Inbox; create one with inbox.New")
	case consumer == "":
		return errors.New("inbox: the consumer name is empty; name the effect the inbox row stands for (e.g. \"email.confirmation\")")
	case eventID == uuid.Nil:
		return errors.New("inbox: the event ID is the nil UUID; pass the delivered event's ID")
	}
	return nil
}
