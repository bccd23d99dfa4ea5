package codec_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/personal"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// A process whose master keys cannot unwrap its database's customer keys
// must refuse to start, whether the database's keys are under another id
// or under the same id with other bytes (a second clone's demo key); a
// rotation (the new key first, the old one kept) passes.
func TestCheckCustomerKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testdb.New(t)
	earlier := codec.NewKeySpec("demo-20261201")
	require.NoError(t, codec.CheckCustomerKeys(ctx, pool, keys(t, earlier)), "no customer key yet: nothing to check")
	makeCustomerKey(t, pool, earlier, "ada@example.com")
	makeCustomerKey(t, pool, earlier, "grace@example.com")

	require.NoError(t, codec.CheckCustomerKeys(ctx, pool, keys(t, earlier)))
	later := codec.NewKeySpec("k2")
	require.NoError(t, codec.CheckCustomerKeys(ctx, pool, keys(t, later+","+earlier)), "a rotation keeps the old key")

	err := codec.CheckCustomerKeys(ctx, pool, keys(t, later))
	require.ErrorIs(t, err, codec.ErrKeysMismatch)
	require.Contains(t, err.Error(), `2 customer keys are wrapped by master key demo-20261201, which OUTFLOW_CODEC_KEYS does not hold`)

	sameID := codec.NewKeySpec("demo-20261201")
	err = codec.CheckCustomerKeys(ctx, pool, keys(t, sameID))
	require.ErrorIs(t, err, codec.ErrKeysMismatch)
	require.Contains(t, err.Error(), `master key "demo-20261201" of OUTFLOW_CODEC_KEYS is not the key of that id`)
	require.NotContains(t, err.Error(), sameID[len("demo-20261201:"):], "never the key itself")

	empty := testdb.Open(t, testdb.NewEmptyURL(t))
	require.NoError(t, codec.CheckCustomerKeys(ctx, empty, keys(t, later)), "an unmigrated database has no customer keys")
}

// makeCustomerKey makes the customer's data key the way a relay does: by
// encoding their order under spec's primary key.
func makeCustomerKey(t *testing.T, pool *pgxpool.Pool, spec, email string) {
	t.Helper()
	dc := codec.NewDataConverter(keys(t, spec), codec.Options{Store: codec.NewPGStore(pool), Subject: personal.Subject})
	_, err := dc.ToPayloads(orderInput(t, email))
	require.NoError(t, err)
}
