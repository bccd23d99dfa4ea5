package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// testBundle is a migrated database and a way to run outboxctl on it.
type testBundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
	url  string
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool, url := testdb.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &testBundle{ctx: ctx, pool: pool, url: url}
}

// result is one outboxctl run.
type result struct {
	code           int
	stdout, stderr string
}

// ctl runs outboxctl through its real entry point against b's database.
func (b *testBundle) ctl(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(b.ctx, append(args, "--database-url", b.url), &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// ok runs outboxctl and requires exit status 0.
func (b *testBundle) ok(t *testing.T, args ...string) result {
	t.Helper()
	r := b.ctl(t, args...)
	require.Equal(t, 0, r.code, "outboxctl %v\nstdout: %s\nstderr: %s", args, r.stdout, r.stderr)
	return r
}

// enqueue commits events of one aggregate, one per type given.
func (b *testBundle) enqueue(t *testing.T, aggregate string, types ...string) []outbox.Event {
	t.Helper()
	var evs []outbox.Event
	for _, typ := range types {
		evs = append(evs, testdb.Event(t, aggregate, typ))
	}
	return testdb.Enqueue(t, b.pool, evs...)
}

func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.pool.Exec(b.ctx, sql, args...)
	require.NoError(t, err)
}

// row is one event with its bookkeeping; it fails the test if the event
// is not in the outbox.
func (b *testBundle) row(t *testing.T, id uuid.UUID) outboxtest.Event {
	t.Helper()
	return outboxtest.RequireEnqueued(t, b.pool, outboxtest.Match{ID: id})
}

// quarantine puts an event where the relay leaves a permanently failing one.
func (b *testBundle) quarantine(t *testing.T, id uuid.UUID, lastError string) {
	t.Helper()
	outboxtest.Force(t, b.pool, outboxtest.Match{ID: id}, outboxtest.SetQuarantined(0, lastError))
}

// runRelay runs a real relay over b's database until the test ends and
// returns the publisher that records what it acknowledged.
func (b *testBundle) runRelay(t *testing.T) *outboxtest.Recorder {
	t.Helper()
	rec := &outboxtest.Recorder{}
	outboxtest.RunRelay(t, b.pool, rec, outbox.RelayConfig{})
	return rec
}

// waitPublished waits until every event is marked published.
func (b *testBundle) waitPublished(t *testing.T, ids ...uuid.UUID) {
	t.Helper()
	for _, id := range ids {
		outboxtest.WaitFor(t, b.pool, outboxtest.Match{ID: id}, 15*time.Second, outboxtest.AllPublished, "event %s published", id)
	}
}

// enqueueTyped commits one event of an aggregate of any type.
func (b *testBundle) enqueueTyped(t *testing.T, aggregateType, aggregateID, eventType string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent(aggregateType, aggregateID, eventType, 1, map[string]string{"id": aggregateID})
	require.NoError(t, err)
	return testdb.Enqueue(t, b.pool, e)[0]
}

func idsOf(evs ...outbox.Event) []uuid.UUID {
	out := make([]uuid.UUID, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}
