package natsconsumer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/natspub"
	"github.com/outflow/outflow/outbox/natspub/dev/natstest"
	"github.com/outflow/outflow/outbox/natspub/natsconsumer"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testlog"
)

// TestConsumerSeesAnOperatorsSkip: an order's events 1, 2 and 3 go
// through a real relay and natspub to a stream that refuses messages over
// 1 KiB; event 2 is larger, so its publish fails for good and it is
// quarantined. The operator skips it (the function outboxctl skip calls).
// The consumer, in a database of its own, applies 1, learns that 2 was
// skipped, applies 3, and the order's later event 4 too; on the stream the
// skip is a message in the order's lane between 1 and 3. For each source
// that has an operator's skip: poll (outbox_events) and log (outbox_log).
func TestConsumerSeesAnOperatorsSkip(t *testing.T) {
	t.Parallel()
	for _, src := range []struct {
		name  string
		relay func(t *testing.T, pool *pgxpool.Pool, pub outbox.Publisher) outbox.Runner
		enq   *outbox.Enqueuer
		skip  func(ctx context.Context, pool *pgxpool.Pool, id uuid.UUID) error
	}{
		{
			name: "poll",
			relay: func(t *testing.T, pool *pgxpool.Pool, pub outbox.Publisher) outbox.Runner {
				r, err := outbox.NewRelay(pool, pub, outbox.RelayConfig{PollInterval: 50 * time.Millisecond, Logger: testlog.Logger()})
				require.NoError(t, err)
				return r
			},
			skip: func(ctx context.Context, pool *pgxpool.Pool, id uuid.UUID) error {
				_, err := outboxops.Skip(ctx, pool, id, "larger than the stream's max_msg_size; handled by hand", "ops")
				return err
			},
		},
		{
			name: "log",
			relay: func(t *testing.T, pool *pgxpool.Pool, pub outbox.Publisher) outbox.Runner {
				r, err := outbox.NewRelay(pool, pub, outbox.RelayConfig{
					PollInterval: 50 * time.Millisecond, Logger: testlog.Logger(), Source: "log"})
				require.NoError(t, err)
				return r
			},
			enq: outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true}),
			skip: func(ctx context.Context, pool *pgxpool.Pool, id uuid.UUID) error {
				_, err := outboxops.SkipLogEvent(ctx, pool, id, "ops", "larger than the stream's max_msg_size; handled by hand")
				return err
			},
		},
	} {
		t.Run(src.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			producer, _ := testdb.New(t)
			consumerDB, _ := testdb.New(t)
			js := connect(t)
			stream, prefix := natstest.Names(t, "skip")
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{
				Name: stream, Subjects: []string{prefix + ".>"}, Storage: jetstream.MemoryStorage, MaxMsgSize: 1024,
			})
			require.NoError(t, err)
			pub := publisher(t, js, stream, prefix)
			outboxtest.Run(t, src.relay(t, producer, pub))

			order := uuid.NewString()
			big := testdb.Event(t, order, "OrderNoted")
			big.Payload = []byte(`{"note":"` + strings.Repeat("x", 2048) + `"}`)
			evs := testdb.EnqueueWith(t, producer, src.enq, testdb.Event(t, order, "OrderCreated"), big)
			evs = append(evs, testdb.EnqueueWith(t, producer, src.enq, testdb.Event(t, order, "OrderPaid"))...)

			p := newProjection(t, consumerDB)
			ib, _ := newInbox(t)
			c := newConsumer(t, js, consumerDB, p, natsconsumer.Config{Name: "skip-" + src.name, Stream: stream, Inbox: ib,
				Skipped: p.skip, Logger: testlog.Logger()})
			run(t, c)
			require.Eventually(t, func() bool { return len(p.effects(t)) == 1 }, 30*time.Second, 20*time.Millisecond, "event 1 applied")

			// Event 2 fails for good (over the stream's max_msg_size) and is
			// quarantined; the operator gives it up.
			require.Eventually(t, func() bool {
				return src.skip(ctx, producer, evs[1].ID) == nil
			}, 30*time.Second, 50*time.Millisecond, "event 2 quarantined and skipped")
			evs = append(evs, testdb.EnqueueWith(t, producer, src.enq, testdb.Event(t, order, "OrderShipped"))...)

			require.Eventually(t, func() bool { return len(p.effects(t)) == 4 }, 30*time.Second, 20*time.Millisecond,
				"the consumer went past the skip of 2 and applied 3 and 4")
			require.Equal(t, []effect{
				{applied{evs[0].ID, order, 1}, false},
				{applied{evs[1].ID, order, 2}, true},
				{applied{evs[2].ID, order, 3}, false},
				{applied{evs[3].ID, order, 4}, false},
			}, p.effects(t), "1 applied, 2 seen as skipped, 3 and 4 applied, in the order's sequence")
			require.EqualValues(t, 4, p.position(t, order))

			// On the stream the skip is a tombstone between 1 and 3: the
			// event's ID and sequence, no body.
			var lane []string
			for _, m := range natstest.Messages(t, js, stream) {
				require.Equal(t, prefix+".order."+order, m.Subject)
				seq := m.Header.Get(natspub.HeaderSequence)
				if m.Header.Get(natspub.HeaderSkipped) == "true" {
					require.Equal(t, evs[1].ID.String(), m.Header.Get(nats.MsgIdHdr))
					require.Empty(t, m.Data, "a tombstone carries no payload")
					seq += " skipped"
				}
				lane = append(lane, seq)
			}
			require.Equal(t, []string{"1", "2 skipped", "3", "4"}, lane)
		})
	}
}

// TestTombstoneOfAnAppliedEventChangesNothing: the tombstone of an event
// the consumer applied already (the stream stored the event before the
// producer quarantined and skipped it; the tombstone came after the
// stream's duplicate window) is absorbed by the inbox. Without
// Config.Skipped, a tombstone in the aggregate's sequence is passed all the
// same: the aggregate's next event is applied.
func TestTombstoneOfAnAppliedEventChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, _ := testdb.New(t)
	js := connect(t)
	stream, prefix := testStream(t, js, 100*time.Millisecond)
	pub := publisher(t, js, stream, prefix)
	order := uuid.NewString()
	a1, a2, a3, a4 := orderEvent(order, 1, "OrderCreated"), orderEvent(order, 2, "OrderPaid"), orderEvent(order, 3, "OrderNoted"),
		orderEvent(order, 4, "OrderShipped")
	require.NoError(t, pub.Publish(ctx, a1))
	require.NoError(t, pub.Publish(ctx, a2))

	p := newProjection(t, pool)
	ib, dups := newInbox(t)
	c := newConsumer(t, js, pool, p, natsconsumer.Config{Name: "tombstones", Stream: stream, Inbox: ib, Logger: testlog.Logger()})
	run(t, c)
	require.Eventually(t, func() bool { return len(p.applied(t)) == 2 }, 30*time.Second, 20*time.Millisecond)

	a2.Skipped, a3.Skipped = true, true
	require.Eventually(t, func() bool {
		if pub.PublishSkip(ctx, a2) != nil {
			return false
		}
		s, err := js.Stream(ctx, stream)
		return err == nil && s.CachedInfo().State.Msgs == 3
	}, 30*time.Second, 50*time.Millisecond, "the tombstone of 2 stored past the duplicate window")
	require.NoError(t, pub.PublishSkip(ctx, a3))
	require.NoError(t, pub.Publish(ctx, a4))

	require.Eventually(t, func() bool { return p.position(t, order) == 4 }, 30*time.Second, 20*time.Millisecond, "3 passed, 4 applied")
	require.Equal(t, []effect{
		{applied{a1.ID, order, 1}, false},
		{applied{a2.ID, order, 2}, false},
		{applied{a4.ID, order, 4}, false},
	}, p.effects(t), "2 applied once, 3 passed without Config.Skipped, 4 applied")
	require.Equal(t, 1.0, testutil.ToFloat64(dups.WithLabelValues("tombstones")), "the tombstone of 2 was a duplicate for the inbox")
}
