package outbox_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestQuarantineHoldsBackItsAggregateUntilRetryOrSkip is the quarantine lane
// rule end to end, with a running relay: a quarantined event holds back its
// aggregate's later events while other aggregates flow; `retry` lets the
// whole lane through in order once the cause is fixed; `skip` gives the
// event up and lets its successors through without it.
func TestQuarantineHoldsBackItsAggregateUntilRetryOrSkip(t *testing.T) {
	t.Parallel()
	var fixed atomic.Bool
	b := setup(t, func(ctx context.Context, e outbox.Event) error {
		if e.Type == "Poison" && !fixed.Load() {
			return outbox.Permanent(errors.New("no route for Poison"))
		}
		if e.Type == "Doomed" {
			return outbox.Permanent(errors.New("payload can never be processed"))
		}
		return nil
	})
	ctx := context.Background()
	retried := testdb.Enqueue(t, b.pool, testdb.Event(t, "retried", "Poison"), testdb.Event(t, "retried", "Next"), testdb.Event(t, "retried", "Last"))
	skipped := testdb.Enqueue(t, b.pool, testdb.Event(t, "skipped", "Doomed"), testdb.Event(t, "skipped", "Next"))
	other := testdb.Enqueue(t, b.pool, testdb.Event(t, "other", "Fine"))
	run(t, b.newRelay(t, outbox.RelayConfig{PollInterval: 50 * time.Millisecond}))

	eventually(t, 10*time.Second, func() bool {
		return quarantined(b.pool, retried[0].ID) && quarantined(b.pool, skipped[0].ID)
	}, "both poison events quarantined")
	eventually(t, 10*time.Second, func() bool { return published(b.pool, other[0].ID) }, "other aggregates flow")
	late := testdb.Enqueue(t, b.pool, testdb.Event(t, "other", "Fine"))
	eventually(t, 10*time.Second, func() bool { return published(b.pool, late[0].ID) }, "later commits flow")
	for _, e := range []outbox.Event{retried[1], retried[2], skipped[1]} {
		require.Zero(t, b.rec.callsFor(e.ID), "%s waits behind its quarantined predecessor", e.Type)
	}
	held, err := outboxops.List(ctx, b.pool, outboxops.ListOptions{AggregateID: "retried"})
	require.NoError(t, err)
	require.Equal(t, []outboxops.EventState{outboxops.StateQuarantined, outboxops.StateBlocked, outboxops.StateBlocked},
		[]outboxops.EventState{held[0].State, held[1].State, held[2].State})

	// Retry: the cause is fixed, the lane flows in order.
	fixed.Store(true)
	c, err := outboxops.Retry(ctx, b.pool, retried[0].ID)
	require.NoError(t, err)
	require.Equal(t, outboxops.StateQuarantined, c.Before.State)
	require.Equal(t, 0, c.After.Attempts)
	eventually(t, 10*time.Second, func() bool { return published(b.pool, ids(retried)...) }, "the retried lane is published")

	// Skip: given up, never published; its successor flows.
	c, err = outboxops.Skip(ctx, b.pool, skipped[0].ID, "payload references a deleted product", "ada@ops")
	require.NoError(t, err)
	require.Equal(t, outboxops.StateSkipped, c.After.State)
	eventually(t, 10*time.Second, func() bool { return published(b.pool, skipped[1].ID) }, "the successor of a skipped event flows")
	require.Nil(t, readRow(t, b.pool, skipped[0].ID).PublishedAt, "a skipped event is never published")

	var order []int64
	b.rec.mu.Lock()
	defer b.rec.mu.Unlock()
	for _, e := range b.rec.acked {
		if e.AggregateID == "retried" {
			order = append(order, e.Sequence)
		}
	}
	require.Equal(t, []int64{1, 2, 3}, order, "the retried lane kept its order")
}
