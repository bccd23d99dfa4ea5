package orders

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

type testBundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
}

// setup gives a test its own migrated database.
func setup(t *testing.T) testBundle {
	t.Helper()
	pool, _ := testdb.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return testBundle{ctx: ctx, pool: pool}
}

// rowCounts is what a write leaves behind.
type rowCounts struct {
	Orders, Events, Sequences, Keys int
}

func (b testBundle) counts(t *testing.T) rowCounts {
	t.Helper()
	var c rowCounts
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT
		(SELECT count(*) FROM orders), (SELECT count(*) FROM outbox_sequences), (SELECT count(*) FROM idempotency_keys)`,
	).Scan(&c.Orders, &c.Sequences, &c.Keys))
	c.Events = len(outboxtest.Events(t, b.pool, outboxtest.Match{}))
	return c
}

func validParams() CreateOrderParams {
	return CreateOrderParams{
		CustomerEmail: "ann@example.com",
		Currency:      "usd",
		PaymentMethod: "pm_card_visa",
		Items: []Item{
			{SKU: "SKU-1", Quantity: 2, UnitAmount: 1250},
			{SKU: "mug.blue_XL", Quantity: 1, UnitAmount: 500},
		},
	}
}
