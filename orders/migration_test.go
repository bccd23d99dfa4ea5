package orders

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestMigrationProjectionHorizonsBackfill: migration 00007 gives existing
// orders what the projection now reads from the order row alone. Their
// created_sequence comes from the OrderCreated event while it exists (1
// once cleanup deleted it), and orders stalled behind events an operator
// skipped before the migration flow again.
func TestMigrationProjectionHorizonsBackfill(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, testdb.NewEmptyURL(t))
	require.NoError(t, err)
	defer pool.Close()
	// The order app's migrations run after the outbox's, whose tables their
	// backfills read.
	require.NoError(t, outbox.Migrate(ctx, pool))
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS(),
		goose.WithTableName(migrations.OrdersVersionTable), goose.WithDisableGlobalRegistry(true))
	require.NoError(t, err)
	_, err = p.UpTo(ctx, 5)
	require.NoError(t, err)

	exec := func(sql string, args ...any) {
		t.Helper()
		_, err := pool.Exec(ctx, sql, args...)
		require.NoError(t, err)
	}
	// order inserts an order at applied and its events: one a sequence from
	// 1, published ("p"), skipped ("s"), pending ("-") or deleted ("x").
	order := func(applied int64, events string) (id uuid.UUID, created uuid.UUID) {
		t.Helper()
		id, created = uuid.New(), uuid.New()
		exec(`INSERT INTO orders (id, customer_email, currency, payment_method, amount, items, created_event_id, applied_sequence)
			VALUES ($1, 'ada@example.com', 'usd', 'pm_card_visa', 2500, '[]', $2, $3)`, id, created, applied)
		for i, state := range events {
			ev := uuid.New()
			if i == 0 {
				ev = created
			}
			if state == 'x' {
				continue
			}
			exec(`INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_sequence, event_type, schema_version, payload,
					published_at, skipped_at)
				VALUES ($1, 'order', $2, $3, 'OrderCreated', 1, '{}',
					CASE WHEN $4 = 'p' THEN now() END, CASE WHEN $4 = 's' THEN now() END)`, ev, id.String(), i+1, string(state))
		}
		return id, created
	}
	published, _ := order(1, "p")
	cleaned, _ := order(1, "x")
	stalled, _ := order(1, "ps-")    // the cancel at 3 waits behind the skipped 2
	early, _ := order(0, "-s-")      // 2 was skipped before 1 applied
	allSkipped, _ := order(0, "ss-") // nothing before 3 will ever apply
	late, created := order(0, "p")   // an OrderCreated that is not its order's first event
	exec(`UPDATE outbox_events SET aggregate_sequence = 2 WHERE event_id = $1`, created)

	require.NoError(t, func() error { _, err := p.Up(ctx); return err }())

	type projection struct {
		CreatedSequence, AppliedSequence int64
		SkippedSequences                 []int64
	}
	read := func(id uuid.UUID) projection {
		t.Helper()
		var pr projection
		require.NoError(t, pool.QueryRow(ctx, `SELECT created_sequence, applied_sequence, skipped_sequences FROM orders WHERE id = $1`, id).
			Scan(&pr.CreatedSequence, &pr.AppliedSequence, &pr.SkippedSequences))
		return pr
	}
	require.Equal(t, projection{1, 1, []int64{}}, read(published))
	require.Equal(t, projection{1, 1, []int64{}}, read(cleaned))
	require.Equal(t, projection{1, 2, []int64{2}}, read(stalled))
	require.Equal(t, projection{1, 0, []int64{2}}, read(early))
	require.Equal(t, projection{1, 2, []int64{1, 2}}, read(allSkipped))
	require.Equal(t, projection{2, 0, []int64{}}, read(late))

	_, err = p.DownTo(ctx, 5)
	require.NoError(t, err, "the migration can be rolled back")
}
