package outboxtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
)

func enqueue(t *testing.T, db *pgxpool.Pool, events ...outbox.Event) []outbox.Event {
	t.Helper()
	var out []outbox.Event
	require.NoError(t, pgx.BeginFunc(context.Background(), db, func(tx pgx.Tx) error {
		var err error
		out, err = outbox.Enqueue(context.Background(), tx, events...)
		return err
	}))
	return out
}

// TestNewSchemaIsolatesTheOutbox: a relay running on the database's own
// outbox (a developer's service) never takes a test's events, and the
// test's relay on its schema gets all of them; two tests' schemas see
// nothing of each other; the schema is gone when the test ends.
func TestNewSchemaIsolatesTheOutbox(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	service := &outboxtest.Recorder{}
	outboxtest.RunRelay(t, pool, service, outbox.RelayConfig{})

	var name string
	t.Run("a test", func(t *testing.T) {
		own := outboxtest.NewSchema(t, pool)
		other := outboxtest.NewSchema(t, pool)
		require.NoError(t, own.QueryRow(context.Background(), "SELECT current_schema()").Scan(&name))
		events := enqueue(t, own, event(t, "invoice", "i-1", "InvoiceIssued"), event(t, "invoice", "i-1", "InvoicePaid"))
		require.Empty(t, outboxtest.Events(t, other, outboxtest.Match{}), "another test's schema sees none")
		require.Empty(t, outboxtest.Events(t, pool, outboxtest.Match{}), "the database's own outbox sees none")

		rec := &outboxtest.Recorder{}
		outboxtest.RunRelay(t, own, rec, outbox.RelayConfig{})
		got := rec.Wait(t, 2, 30*time.Second)
		require.Equal(t, events[0].ID, got[0].ID)
		require.Equal(t, events[1].ID, got[1].ID)
		outboxtest.WaitFor(t, own, outboxtest.Match{}, 10*time.Second, outboxtest.AllPublished)
	})
	require.Empty(t, service.Events(), "the service's relay took none of the test's events")
	var exists bool
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", name).Scan(&exists))
	require.False(t, exists, "the schema %s is dropped when its test ends", name)
}

// TestWaitSaysWhoHoldsTheEvents: a Wait that times out names who holds the
// events: another relay that published them, or no relay at all.
func TestWaitSaysWhoHoldsTheEvents(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	db := outboxtest.NewSchema(t, pool)

	enqueue(t, db, event(t, "invoice", "i-2", "InvoiceIssued"), event(t, "invoice", "i-3", "InvoiceIssued"))
	idle := &outboxtest.Recorder{DB: db}
	msg := failure(t, func(tb testing.TB) { idle.Wait(tb, 2, 200*time.Millisecond) })
	require.Contains(t, msg, "0 events published to this recorder within 200ms, want 2")
	require.Contains(t, msg, "2 pending (no relay has claimed them: is one running on this database and schema?)")

	thief := &outboxtest.Recorder{}
	stop := outboxtest.RunRelay(t, db, thief, outbox.RelayConfig{Owner: "someone-elses-relay"})
	thief.Wait(t, 2, 30*time.Second)
	outboxtest.WaitFor(t, db, outboxtest.Match{}, 10*time.Second, outboxtest.AllPublished)
	stop()
	msg = failure(t, func(tb testing.TB) { idle.Wait(tb, 1, 100*time.Millisecond) })
	require.Contains(t, msg, "2 published (by relay someone-elses-relay, at ")
}
