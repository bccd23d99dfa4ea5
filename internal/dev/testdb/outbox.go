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
