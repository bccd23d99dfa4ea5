package outboxops_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/dev/testdb"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
)

// setup returns a pool on a freshly migrated database of t's own.
func setup(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, _ := testdb.New(t)
	return pool
}

// mustEvent is an order's event of type typ.
func mustEvent(t *testing.T, aggID, typ string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent("order", aggID, typ, 1, map[string]string{"order_id": aggID})
	require.NoError(t, err)
	return e
}

// enqueue commits events in one transaction and returns them as written.
func enqueue(t *testing.T, pool *pgxpool.Pool, events ...outbox.Event) []outbox.Event {
	t.Helper()
	var out []outbox.Event
	require.NoError(t, pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		var err error
		out, err = outbox.Enqueue(context.Background(), tx, events...)
		return err
	}))
	return out
}

func ids(events []outbox.Event) []uuid.UUID {
	out := make([]uuid.UUID, len(events))
	for i, e := range events {
		out[i] = e.ID
	}
	return out
}

// row reads one event's row as outboxtest sees it.
func row(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) outboxtest.Event {
	t.Helper()
	return outboxtest.RequireEnqueued(t, pool, outboxtest.Match{ID: id})
}

// published reports whether every event of ids is published.
func published(t *testing.T, pool *pgxpool.Pool, ids ...uuid.UUID) bool {
	t.Helper()
	for _, id := range ids {
		if row(t, pool, id).PublishedAt == nil {
			return false
		}
	}
	return true
}
