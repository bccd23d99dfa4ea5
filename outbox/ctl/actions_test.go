package ctl

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ctltest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// The operator's actions mean the same on every relay source
// (docs/operations.md, "What each action means"): TestOperatorActions runs
// one scenario of them through outboxctl, once per source, and asserts
// what the sink sees, which is the same on all three.

// actionPub is the relay's publisher in TestOperatorActions: it refuses
// the events in poison permanently (the event's own fault), and records
// every publish it acknowledges, in order.
type actionPub struct {
	mu     sync.Mutex
	poison map[uuid.UUID]bool
	got    []outbox.Event
}

func (p *actionPub) Publish(_ context.Context, e outbox.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.poison[e.ID] {
		return outbox.Permanent(errors.New("no route for this event"))
	}
	p.got = append(p.got, e)
	return nil
}

func (p *actionPub) cure(id uuid.UUID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.poison, id)
}

// delivered is what the sink acknowledged of one order, in order, and
// which of those publishes were replays.
func (p *actionPub) delivered(aggregateID string) (ids []uuid.UUID, replays []bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.got {
		if e.AggregateID == aggregateID {
			ids = append(ids, e.ID)
			replays = append(replays, e.Replay)
		}
	}
	return ids, replays
}

// actionSource is one relay source under TestOperatorActions: how its
// producers write, and the relay that reads what they wrote.
type actionSource struct {
	name    string
	setup   func(t *testing.T) *testBundle
	enqueue outbox.EnqueueConfig
	relay   func(t *testing.T, b *testBundle, pub outbox.Publisher) outbox.Runner
}

var actionSources = []actionSource{
	{
		name:  "poll",
		setup: setup,
		relay: func(t *testing.T, b *testBundle, pub outbox.Publisher) outbox.Runner {
			r, err := outbox.NewRelay(b.Pool, pub, withSource(actionRelayConfig(), "poll", nil))
			require.NoError(t, err)
			return r
		},
	},
	{
		name: "cdc",
		setup: func(t *testing.T) *testBundle {
			pool, url := testdb.NewLogical(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			t.Cleanup(cancel)
			return bundleOn(ctx, pool, url)
		},
		relay: func(t *testing.T, b *testBundle, pub outbox.Publisher) outbox.Runner {
			r, err := outbox.NewRelay(b.Pool, pub, withSource(actionRelayConfig(), "cdc", func(c *outbox.RelayConfig) {
				c.CDCSlot = "outflow_actions_" + uuid.NewString()[:8]
				// The sweeper publishes what the stream was not handed (a
				// retried or replayed event) once it is this old.
				c.CDCGrace = 200 * time.Millisecond
				c.CDCStatusInterval, c.CDCStandbyRetry = 50*time.Millisecond, 100*time.Millisecond
			}))
			require.NoError(t, err)
			return r
		},
	},
	{
		name:    "log",
		setup:   setup,
		enqueue: outbox.EnqueueConfig{Log: true},
		relay: func(t *testing.T, b *testBundle, pub outbox.Publisher) outbox.Runner {
			r, err := outbox.NewRelay(b.Pool, pub, withSource(actionRelayConfig(), "log", nil))
			require.NoError(t, err)
			return r
		},
	},
}

func actionRelayConfig() outbox.RelayConfig {
	return outbox.RelayConfig{
		PollInterval: 100 * time.Millisecond, RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		MaxAttempts: 2, Logger: quiet(),
	}
}

// withSource is cfg reading source alone, with set's changes.
func withSource(cfg outbox.RelayConfig, source string, set func(*outbox.RelayConfig)) outbox.RelayConfig {
	cfg.Source = source
	if set != nil {
		set(&cfg)
	}
	return cfg
}

// TestOperatorActions: on every source, through outboxctl,
//   - quarantine: a poison event is quarantined and holds back its own
//     order's later events, not another order's;
//   - retry: once its cause is mended, the quarantined event and then its
//     order's later events are delivered, in order;
//   - skip: the skipped event is never delivered, its order's later events
//     are, and show says it was skipped;
//   - replay: the order's delivered events are delivered again, marked as
//     replays and in order, and a skipped event is not among them; the plan
//     shown counts what is delivered.
func TestOperatorActions(t *testing.T) {
	t.Parallel()
	for _, src := range actionSources {
		t.Run(src.name, func(t *testing.T) {
			t.Parallel()
			b := src.setup(t)
			retried, skipped, other := b.order(t), b.order(t), b.order(t)
			enq := outbox.NewEnqueuer(src.enqueue)
			r := testdb.EnqueueWith(t, b.Pool, enq,
				testdb.Event(t, retried, "OrderCreated"), testdb.Event(t, retried, "OrderPaid"), testdb.Event(t, retried, "OrderShipped"))
			s := testdb.EnqueueWith(t, b.Pool, enq,
				testdb.Event(t, skipped, "OrderCreated"), testdb.Event(t, skipped, "OrderPaid"), testdb.Event(t, skipped, "OrderShipped"))
			pub := &actionPub{poison: map[uuid.UUID]bool{r[1].ID: true, s[1].ID: true}}
			outboxtest.Run(t, src.relay(t, b, pub))

			// Quarantine: each order stops at its poison event.
			for _, id := range []uuid.UUID{r[1].ID, s[1].ID} {
				b.waitQuarantined(t, id)
			}
			o := testdb.EnqueueWith(t, b.Pool, enq, testdb.Event(t, other, "OrderCreated"))
			b.waitDelivered(t, pub, other, ctltest.IDs(o...), nil)
			requireDelivered(t, pub, retried, ctltest.IDs(r[0]), nil, "a quarantined event holds its order's later events")
			requireDelivered(t, pub, skipped, ctltest.IDs(s[0]), nil, "a quarantined event holds its order's later events")

			// Retry, once the cause is mended: the rest of the order, in order.
			pub.cure(r[1].ID)
			b.OK(t, "retry", r[1].ID.String(), "--yes")
			b.waitDelivered(t, pub, retried, ctltest.IDs(r...), nil)

			// Skip: never delivered; the order goes on past it.
			b.OK(t, "skip", s[1].ID.String(), "--reason", "refunded by hand", "--yes")
			b.waitDelivered(t, pub, skipped, ctltest.IDs(s[0], s[2]), nil)
			require.Regexp(t, `state\s+skipped`, b.OK(t, "show", s[1].ID.String(), "--temporal=false").Stdout)

			// Replay of both orders: delivered again as replays, in order,
			// the skipped event not among them, and the plan says so.
			require.NoError(t, outboxops.RecordReplayHorizon(b.Ctx, b.Pool, time.Hour, "the test's namespace keeps 1h"))
			from := time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339)
			to := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
			out := b.OK(t, "replay", "--from", from, "--to", to, "--aggregate", skipped, "--aggregate-type", "order", "--yes").Stdout
			require.Contains(t, out, "replayed 2 events", "the plan counts what is delivered, not the skipped event")
			b.waitDelivered(t, pub, skipped, ctltest.IDs(s[0], s[2], s[0], s[2]), []bool{false, false, true, true})
			out = b.OK(t, "replay", "--from", from, "--to", to, "--aggregate", retried, "--aggregate-type", "order", "--yes").Stdout
			require.Contains(t, out, "replayed 3 events")
			b.waitDelivered(t, pub, retried, append(ctltest.IDs(r...), ctltest.IDs(r...)...), []bool{false, false, false, true, true, true})
			requireDelivered(t, pub, skipped, ctltest.IDs(s[0], s[2], s[0], s[2]), []bool{false, false, true, true},
				"a skipped event is never delivered, not even by a replay")
		})
	}
}

// waitQuarantined waits until outboxctl lists the event as quarantined.
func (b *testBundle) waitQuarantined(t *testing.T, id uuid.UUID) {
	t.Helper()
	require.Eventually(t, func() bool {
		r := b.Ctl(t, "list", "--quarantined")
		return r.Code == 0 && strings.Contains(r.Stdout, id.String())
	}, 30*time.Second, 50*time.Millisecond, "event %s quarantined", id)
}

// waitDelivered waits until the sink has acknowledged exactly ids of the
// order (replays: which of them are replays; nil: none), then requires it.
func (b *testBundle) waitDelivered(t *testing.T, pub *actionPub, aggregateID string, ids []uuid.UUID, replays []bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		got, _ := pub.delivered(aggregateID)
		return len(got) >= len(ids)
	}, 30*time.Second, 20*time.Millisecond, "%d deliveries of order %s", len(ids), aggregateID)
	requireDelivered(t, pub, aggregateID, ids, replays, "deliveries of order "+aggregateID)
}

func requireDelivered(t *testing.T, pub *actionPub, aggregateID string, ids []uuid.UUID, replays []bool, what string) {
	t.Helper()
	if replays == nil {
		replays = make([]bool, len(ids))
	}
	got, gotReplays := pub.delivered(aggregateID)
	require.Equal(t, ids, got, what)
	require.Equal(t, replays, gotReplays, what+": replays")
}
