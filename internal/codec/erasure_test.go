package codec_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/codec"
	"github.com/outflow/outflow/internal/personal"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// Once forget-customer has committed, no process encrypts with the erased
// key, whatever it cached: a new order of the customer gets a new key,
// which every other process reads.
func TestNoEncryptionWithAnErasedKey(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx := context.Background()
	ks := keys(t, k1)
	newDC := func() *codec.DataConverter {
		return codec.NewDataConverter(ks, codec.Options{Store: codec.NewPGStore(pool), Subject: personal.Subject})
	}
	relay := newDC() // the starter: its cache holds Ada's key
	first, err := relay.ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)
	_, err = codec.Forget(ctx, pool, "ada@example.com", "ops", "GDPR request")
	require.NoError(t, err)

	again, err := relay.ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)
	require.NotEqual(t, keyID(first.Payloads[0]), keyID(again.Payloads[0]), "a new order after the erasure gets a new key")
	var in handoff.EventInput
	require.NoError(t, newDC().FromPayloads(again, &in), "a worker that never saw the old key reads the new order")
	require.ErrorIs(t, newDC().FromPayloads(first, &in), codec.ErrErased)
}

// An encoder racing forget-customer either finishes before the erasure
// takes the key (and the erasure sees its event) or waits for it and gets a
// new key: never the erased key after the commit.
func TestEncodeWaitsForAnErasureInFlight(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ks := keys(t, k1)
	dc := codec.NewDataConverter(ks, codec.Options{Store: codec.NewPGStore(pool)})
	first, err := dc.ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)

	checked, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var forgetErr error
	go func() {
		defer wg.Done()
		_, forgetErr = codec.ForgetWith(ctx, pool, codec.ForgetOptions{Email: "ada@example.com", Actor: "ops", Reason: "race",
			Check: func(context.Context, pgx.Tx) error {
				close(checked)
				<-release
				return nil
			}})
	}()
	<-checked // the key row is deleted, not yet committed
	done := make(chan string, 1)
	go func() {
		ps, err := dc.ToPayloads(orderInput(t, "ada@example.com"))
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		done <- keyID(ps.Payloads[0])
	}()
	select {
	case id := <-done:
		t.Fatalf("encoded with %s while the erasure was in flight", id)
	case <-time.After(300 * time.Millisecond): // it waits: the point of the test
	}
	close(release)
	wg.Wait()
	require.NoError(t, forgetErr)
	id := <-done
	require.NotEqual(t, keyID(first.Payloads[0]), id)
	require.Contains(t, id, codec.CustomerKeyPrefix)
}

// A workflow input under an erased key is not a task to retry: decoding it
// fails the workflow (an error without the SDK's task-failure marker),
// while any other payload under an erased key still fails only the task.
func TestAnErasedWorkflowInputFailsTheWorkflow(t *testing.T) {
	t.Parallel()
	store := codec.NewMemoryStore()
	ks := keys(t, k1)
	input, err := codec.NewDataConverter(ks, codec.Options{Store: store}).ToPayloads(orderInput(t, "ada@example.com"))
	require.NoError(t, err)
	require.True(t, store.Erase("ada@example.com"))
	dc := codec.NewDataConverter(ks, codec.Options{Store: store}) // a worker without the key cached

	var in handoff.EventInput
	err = dc.FromPayloads(input, &in)
	require.ErrorIs(t, err, codec.ErrErased)
	var task *converter.WorkflowTaskFailureError
	require.False(t, errors.As(err, &task), "a workflow that can never read its input fails: %v", err)

	var raw map[string]any
	err = dc.FromPayloads(input, &raw)
	require.ErrorIs(t, err, codec.ErrErased)
	require.True(t, errors.As(err, &task), "another value fails the task, as before")
}
