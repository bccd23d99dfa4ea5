package outbox_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// tombstoneRecorder is a recorder that takes tombstones too: PublishSkip
// goes through the same answer and record as Publish (Event.Skipped set).
type tombstoneRecorder struct{ *recorder }

func (r tombstoneRecorder) PublishSkip(ctx context.Context, e outbox.Event) error {
	return r.Publish(ctx, e)
}

// ackedEvents are the acknowledged events, in order.
func (r *recorder) ackedEvents() []outbox.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.acked)
}

// skipSource is a relay source under test with its operator's skip.
type skipSource struct {
	name  string
	db    func(t testing.TB) (*pgxpool.Pool, string)
	enq   *outbox.Enqueuer
	relay func(t *testing.T, pool *pgxpool.Pool, pub outbox.Publisher, cfg outbox.RelayConfig) (outbox.Runner, error)
	skip  func(ctx context.Context, pool *pgxpool.Pool, id uuid.UUID) error
}

// skipEvent is outboxctl skip's operator function for outbox_events.
func skipEvent(ctx context.Context, pool *pgxpool.Pool, id uuid.UUID) error {
	_, err := outboxops.Skip(ctx, pool, id, "handled by hand", "ops")
	return err
}

var skipSources = []skipSource{
	{
		name: "poll",
		db:   testdb.New,
		relay: func(_ *testing.T, pool *pgxpool.Pool, pub outbox.Publisher, cfg outbox.RelayConfig) (outbox.Runner, error) {
			return outbox.NewPollRelay(pool, pub, cfg)
		},
		skip: skipEvent,
	},
	{
		name: "cdc",
		db:   testdb.NewLogical,
		relay: func(t *testing.T, pool *pgxpool.Pool, pub outbox.Publisher, cfg outbox.RelayConfig) (outbox.Runner, error) {
			return outbox.NewCDCRelay(pool, pub, outbox.CDCConfig{RelayConfig: cfg, Slot: testSlot(t),
				StatusInterval: 50 * time.Millisecond, StandbyRetry: 100 * time.Millisecond})
		},
		skip: skipEvent,
	},
	{
		name: "log",
		db:   testdb.New,
		enq:  logEnqueuer,
		relay: func(_ *testing.T, pool *pgxpool.Pool, pub outbox.Publisher, cfg outbox.RelayConfig) (outbox.Runner, error) {
			return outbox.NewLogRelay(pool, pub, outbox.LogConfig{RelayConfig: cfg})
		},
		skip: func(ctx context.Context, pool *pgxpool.Pool, id uuid.UUID) error {
			_, err := outboxops.SkipLogEvent(ctx, pool, id, "ops", "handled by hand")
			return err
		},
	},
}

// TestSkipIsDeliveredAsATombstoneInItsLane: an order's event 2 is
// quarantined and skipped by an operator. A publisher that takes tombstones
// (outbox.SkipPublisher) gets event 2's tombstone before event 3, however
// often the tombstone fails first (a permanent error and more failures
// than MaxAttempts: it is retried, never quarantined), and event 3 waits
// for it. A publisher that takes none (Temporal's) never sees event 2
// again, and event 3 follows the skip at once. For each source.
func TestSkipIsDeliveredAsATombstoneInItsLane(t *testing.T) {
	t.Parallel()
	for _, src := range skipSources {
		for _, takesTombstones := range []bool{true, false} {
			name := src.name + "/no_tombstones"
			if takesTombstones {
				name = src.name + "/tombstones"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				pool, _ := src.db(t)
				order := uuid.NewString()
				evs := enqueueWith(t, pool, src.enq, testdb.Event(t, order, "OrderCreated"), testdb.Event(t, order, "OrderNoted"))

				var tombstoneFailures atomic.Int32
				rec := newRecorder(func(_ context.Context, e outbox.Event) error {
					switch {
					case e.ID != evs[1].ID:
						return nil
					case !e.Skipped:
						return outbox.Permanent(errors.New("message exceeds the stream's maximum size"))
					}
					switch tombstoneFailures.Add(1) {
					case 1:
						return outbox.Permanent(errors.New("the tombstone is refused"))
					case 2, 3:
						return errors.New("the tombstone is refused for now")
					}
					return nil
				})
				var pub outbox.Publisher = rec
				if takesTombstones {
					pub = tombstoneRecorder{rec}
				}
				r, err := src.relay(t, pool, pub, outbox.RelayConfig{PollInterval: 50 * time.Millisecond, MaxAttempts: 2,
					RetryBase: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, Logger: quietLogger()})
				require.NoError(t, err)
				run(t, r)

				// Event 3 is committed while event 2 fails (the CDC relay's
				// stream receives it), then event 2 is quarantined and skipped.
				eventually(t, 30*time.Second, func() bool { return rec.callsFor(evs[1].ID) > 0 }, "event 2 attempted")
				evs = append(evs, enqueueWith(t, pool, src.enq, testdb.Event(t, order, "OrderPaid"))...)
				eventually(t, 30*time.Second, func() bool { return src.skip(ctx, pool, evs[1].ID) == nil }, "event 2 quarantined, then skipped")
				callsBefore := rec.callsFor(evs[1].ID)
				eventually(t, 30*time.Second, func() bool { return rec.ackedIDs()[evs[2].ID] == 1 }, "event 3 published after the skip")

				var lane []string
				for _, e := range rec.ackedEvents() {
					require.Equal(t, order, e.AggregateID)
					what := e.Type
					if e.Skipped {
						what += " skipped"
					}
					lane = append(lane, what)
				}
				if !takesTombstones {
					require.Equal(t, []string{"OrderCreated", "OrderPaid"}, lane, "a publisher without tombstones gets only the events")
					require.Equal(t, callsBefore, rec.callsFor(evs[1].ID), "nor is it offered the skipped event again")
					return
				}
				require.Equal(t, []string{"OrderCreated", "OrderNoted skipped", "OrderPaid"}, lane, "the tombstone in the skipped event's place")
				require.EqualValues(t, 4, tombstoneFailures.Load(), "three failed tombstones retried, not quarantined")
				if src.enq == nil { // outbox_events
					var published, tombstoned bool
					require.NoError(t, pool.QueryRow(ctx, `SELECT published_at IS NOT NULL, skip_published_at IS NOT NULL FROM outbox_events WHERE event_id = $1`,
						evs[1].ID).Scan(&published, &tombstoned))
					require.False(t, published, "a skipped event is never published")
					require.True(t, tombstoned, "its tombstone is")
				}
			})
		}
	}
}
