package outboxops_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// setup returns a pool on a freshly migrated database of t's own.
func setup(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, _ := testdb.New(t)
	return pool
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
