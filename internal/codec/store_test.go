package codec_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/personal"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// The customer_keys table: concurrent encoders of one new customer agree on
// one key; forget-customer erases it with an audit row, after which that
// customer's payloads fail naming the key and the erasure, and everyone
// else's still decode.
func TestPGStoreAndForget(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()
	ks := keys(t, k1)
	newDC := func() *codec.DataConverter { // a process of its own: its own cache
		return codec.NewDataConverter(ks, codec.Options{Store: codec.NewPGStore(pool), Subject: personal.Subject})
	}

	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ps, err := newDC().ToPayloads(orderInput(t, "ada@example.com"))
			if err == nil {
				ids[i] = keyID(ps.Payloads[0])
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, ids[0], id, "one key per customer, whoever creates it")
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM customer_keys`).Scan(&n))
	require.Equal(t, 1, n)

	dc := newDC()
	ada, err := dc.ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)
	grace, err := dc.ToPayloads(activities.SendEmailInput{To: "grace@example.com", OrderID: "o2"})
	require.NoError(t, err)

	e, err := codec.Forget(ctx, pool, " Ada@Example.com", "ops@example", "GDPR art. 17 request #42")
	require.NoError(t, err)
	require.NotNil(t, e.KeyID)
	require.Equal(t, codec.CustomerKeyPrefix+e.KeyID.String(), ids[0])
	require.Empty(t, e.Earlier)

	var in handoff.EventInput
	err = newDC().FromPayloads(ada, &in)
	require.ErrorIs(t, err, codec.ErrErased)
	require.Contains(t, err.Error(), ids[0])
	require.Contains(t, err.Error(), "forget-customer")
	var mail activities.SendEmailInput
	require.NoError(t, newDC().FromPayloads(grace, &mail))
	require.Equal(t, "grace@example.com", mail.To)

	// The audit row holds no address and no key.
	var by, reason string
	var hash []byte
	var auditKey *uuid.UUID
	require.NoError(t, pool.QueryRow(ctx, `SELECT erased_by, reason, subject_hash, key_id FROM customer_key_erasures`).Scan(&by, &reason, &hash, &auditKey))
	require.Equal(t, "ops@example", by)
	require.Equal(t, "GDPR art. 17 request #42", reason)
	require.Equal(t, codec.SubjectHash("ada@example.com"), hash)
	require.Equal(t, e.KeyID, auditKey)

	// Asking again records the request, finds no key, and lists the first.
	again, err := codec.Forget(ctx, pool, "ada@example.com", "ops@example", "repeated request")
	require.NoError(t, err)
	require.Nil(t, again.KeyID)
	require.Len(t, again.Earlier, 1)
	require.Equal(t, e.KeyID, again.Earlier[0].KeyID)

	// An unknown customer key (another database's) fails naming it.
	other := codec.NewDataConverter(ks, codec.Options{Store: codec.NewMemoryStore()})
	foreign, err := other.ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)
	err = newDC().FromPayloads(foreign, &in)
	require.ErrorIs(t, err, codec.ErrUnknownKey)
	require.Contains(t, err.Error(), keyID(foreign.Payloads[0]))
}

// A running process drops a forgotten key from its cache within the TTL.
func TestCachedKeyExpires(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()
	dc := codec.NewDataConverter(keys(t, k1), codec.Options{Store: codec.NewPGStore(pool), CacheTTL: 300 * time.Millisecond})
	ps, err := dc.ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)
	var in handoff.EventInput
	require.NoError(t, dc.FromPayloads(ps, &in))
	_, err = codec.Forget(ctx, pool, "ada@example.com", "ops", "test")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return dc.FromPayloads(ps, &in) != nil
	}, 5*time.Second, 50*time.Millisecond)
}
