package testdb

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
)

// Enqueue commits events to the outbox of pool's database in a transaction
// of their own and returns them as written (IDs, sequences, times): the
// events a relay's or an operator tool's test starts from, with no business
// change around them.
func Enqueue(t testing.TB, pool *pgxpool.Pool, events ...outbox.Event) []outbox.Event {
	t.Helper()
	return EnqueueWith(t, pool, nil, events...)
}

// EnqueueWith is [Enqueue] through q: with EnqueueConfig.Log, to the
// append-only log the log source reads. A nil q is outbox.Enqueue.
func EnqueueWith(t testing.TB, pool *pgxpool.Pool, q *outbox.Enqueuer, events ...outbox.Event) []outbox.Event {
	t.Helper()
	var out []outbox.Event
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		var err error
		out, err = q.Enqueue(context.Background(), tx, events...)
		return err
	})
	if err != nil {
		t.Fatalf("testdb: enqueue: %v", err)
	}
	return out
}

// Event is an event of the order aggregateID of type eventType, schema
// version 1, whose payload is {"order_id": aggregateID}.
func Event(t testing.TB, aggregateID, eventType string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent("order", aggregateID, eventType, 1, map[string]string{"order_id": aggregateID})
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	return e
}

// SameLogPartition returns n order IDs (prefix-0, prefix-1, ...) whose
// events share one partition of the log (outbox_log_partition of the
// aggregate type "order" that [Event] writes), and the partition: for a
// test of what one order does to the others of its partition.
func SameLogPartition(t testing.TB, pool *pgxpool.Pool, prefix string, n int) ([]string, int) {
	t.Helper()
	byPart := map[int][]string{}
	for i := 0; ; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		p, err := qLogPartition.Value(context.Background(), pool, aggregateArgs{AggregateType: "order", AggregateID: id})
		if err != nil {
			t.Fatalf("testdb: the log partition of order %s: %v", id, err)
		}
		byPart[p] = append(byPart[p], id)
		if len(byPart[p]) == n {
			return byPart[p], p
		}
	}
}

// EnqueueAsRead is [Enqueue] by a producer whose transaction read the relay
// source source before an operator changed it to what the database says
// now: the events go where source says (outbox_events for poll and cdc,
// the log for log), the late write every relay must still publish in
// sequence. Its transaction sets outbox_source to source for itself and
// back before it commits, so the recorded source is what it was.
func EnqueueAsRead(t testing.TB, pool *pgxpool.Pool, source string, events ...outbox.Event) []outbox.Event {
	t.Helper()
	ctx := context.Background()
	var out []outbox.Event
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		was, err := qSetSourceFor.Value(ctx, tx, sourceArgs{Source: source})
		if err != nil {
			return err
		}
		if out, err = outbox.Enqueue(ctx, tx, events...); err != nil {
			return err
		}
		_, err = qSetSourceFor.Value(ctx, tx, sourceArgs{Source: was})
		return err
	})
	if err != nil {
		t.Fatalf("testdb: enqueue as a producer that read %s: %v", source, err)
	}
	return out
}
