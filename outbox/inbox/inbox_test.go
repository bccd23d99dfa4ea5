package inbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/inbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/promtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

type testBundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
	reg  *prometheus.Registry
	ib   *inbox.Inbox
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool, _ := testdb.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	reg := prometheus.NewRegistry()
	ib, err := inbox.New(reg)
	require.NoError(t, err)
	return &testBundle{ctx: ctx, pool: pool, reg: reg, ib: ib}
}

// record runs Record in a transaction of its own that commits.
func (b *testBundle) record(t *testing.T, consumer string, id uuid.UUID) bool {
	t.Helper()
	var first bool
	require.NoError(t, pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		first, err = b.ib.Record(b.ctx, tx, consumer, id)
		return err
	}))
	return first
}

// duplicates reads inbox_duplicates_total{consumer} from the registry, as a
// scrape would.
func duplicates(t *testing.T, reg prometheus.Gatherer, consumer string) float64 {
	t.Helper()
	return promtest.Total(t, reg, inbox.DuplicatesMetric, inbox.ConsumerLabel, consumer)
}

// TestRecordOncePerConsumer: the first delivery is first, a redelivery after
// the commit is not and is counted; another consumer of the same event has
// its own row.
func TestRecordOncePerConsumer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := uuid.New()
	require.True(t, b.record(t, "email.confirmation", id))
	require.Zero(t, duplicates(t, b.reg, "email.confirmation"))
	require.False(t, b.record(t, "email.confirmation", id))
	require.False(t, b.record(t, "email.confirmation", id))
	require.Equal(t, 2.0, duplicates(t, b.reg, "email.confirmation"))
	require.True(t, b.record(t, "order_status.paid", id), "another effect of the same event")
	require.Zero(t, duplicates(t, b.reg, "order_status.paid"))
	require.True(t, b.record(t, "email.confirmation", uuid.New()), "another event")
}

// TestRecordRollsBackWithTheEffect: a delivery whose transaction rolls back
// leaves no row, so the next delivery is first again.
func TestRecordRollsBackWithTheEffect(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := uuid.New()
	errEffect := errors.New("the effect failed")
	err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		first, err := b.ib.Record(b.ctx, tx, "projection", id)
		require.NoError(t, err)
		require.True(t, first)
		return errEffect
	})
	require.ErrorIs(t, err, errEffect)
	require.True(t, b.record(t, "projection", id), "the rolled-back row is gone")
	require.Zero(t, duplicates(t, b.reg, "projection"))
}

// TestRecordConcurrentDeliveries: while one delivery's transaction is open,
// a concurrent one waits on the row's key, and once the first commits it is
// told "not first": the two cannot both apply the effect.
func TestRecordConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := uuid.New()
	tx1, err := b.pool.Begin(b.ctx)
	require.NoError(t, err)
	defer tx1.Rollback(b.ctx) //nolint:errcheck
	first, err := b.ib.Record(b.ctx, tx1, "projection", id)
	require.NoError(t, err)
	require.True(t, first)

	second := make(chan bool, 1)
	go func() {
		var got bool
		err := pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
			var err error
			got, err = b.ib.Record(b.ctx, tx, "projection", id)
			return err
		})
		if err != nil {
			t.Errorf("second delivery: %v", err)
		}
		second <- got
	}()
	require.Eventually(t, func() bool {
		var waiting bool
		err := b.pool.QueryRow(b.ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'
			  AND query LIKE '%INSERT INTO processed_events%')`).Scan(&waiting)
		return err == nil && waiting
	}, 10*time.Second, 10*time.Millisecond, "the second delivery waits for the first transaction")
	require.NoError(t, tx1.Commit(b.ctx))
	select {
	case got := <-second:
		require.False(t, got, "the second delivery finds the committed row")
	case <-time.After(30 * time.Second):
		t.Fatal("the second delivery did not return after the first committed")
	}
	require.Equal(t, 1.0, duplicates(t, b.reg, "projection"))
}

// TestSeenThenRecord: the pattern of an effect outside the database. Seen is
// false until Record, then true and counted.
func TestSeenThenRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := uuid.New()
	seen, err := b.ib.Seen(b.ctx, b.pool, "email.cancellation", id)
	require.NoError(t, err)
	require.False(t, seen)
	require.Zero(t, duplicates(t, b.reg, "email.cancellation"))
	first, err := b.ib.Record(b.ctx, b.pool, "email.cancellation", id)
	require.NoError(t, err)
	require.True(t, first)
	seen, err = b.ib.Seen(b.ctx, b.pool, "email.cancellation", id)
	require.NoError(t, err)
	require.True(t, seen)
	require.Equal(t, 1.0, duplicates(t, b.reg, "email.cancellation"))
	seen, err = b.ib.Seen(b.ctx, b.pool, "email.confirmation", id)
	require.NoError(t, err)
	require.False(t, seen, "another consumer")
}

// TestNewSharesTheRegistry: a second Inbox on one registry shares the
// counter (no panic, no error); a foreign collector of the same name is an
// error that names the metric.
func TestNewSharesTheRegistry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other, err := inbox.New(b.reg)
	require.NoError(t, err)
	id := uuid.New()
	require.True(t, b.record(t, "c", id))
	_, err = other.Record(b.ctx, b.pool, "c", id)
	require.NoError(t, err)
	require.Equal(t, 1.0, duplicates(t, b.reg, "c"), "the second Inbox counts on the registered counter")

	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: inbox.DuplicatesMetric, Help: "something else"}))
	_, err = inbox.New(reg)
	require.ErrorContains(t, err, inbox.DuplicatesMetric)

	unregistered, err := inbox.New(nil)
	require.NoError(t, err)
	first, err := unregistered.Record(b.ctx, b.pool, "c", id)
	require.NoError(t, err)
	require.False(t, first)
}

// TestRecordRefusesAMeaninglessKey: an empty consumer, the nil UUID and a
// nil Inbox are errors that say what to pass, and write nothing.
func TestRecordRefusesAMeaninglessKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.ib.Record(b.ctx, b.pool, "", uuid.New())
	require.ErrorContains(t, err, "consumer name is empty")
	_, err = b.ib.Record(b.ctx, b.pool, "c", uuid.Nil)
	require.ErrorContains(t, err, "nil UUID")
	_, err = (*inbox.Inbox)(nil).Seen(b.ctx, b.pool, "c", uuid.New())
	require.ErrorContains(t, err, "inbox.New")
	seen, err := b.ib.Seen(b.ctx, b.pool, "", uuid.New())
	require.Error(t, err)
	require.False(t, seen)
}

// TestStatements: every statement of inbox.sql is bound once, and the
// database describes each with the columns its row type reads.
func TestStatements(t *testing.T) {
	t.Parallel()
	require.NotEmpty(t, inbox.StatementsForTest())
	testdb.CheckStatements(t, inbox.QueriesForTest(), inbox.StatementsForTest()...)
}
