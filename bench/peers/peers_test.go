package main

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/natspub"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestOrderTrackerCountsOvertakenEvents feeds the tracker a known delivery
// sequence over two orders and checks each verdict and the total.
func TestOrderTrackerCountsOvertakenEvents(t *testing.T) {
	t.Parallel()
	tr := newOrderTracker()
	steps := []struct {
		order string
		seq   int64
		late  bool
	}{
		{"a", 1, false},
		{"a", 3, false}, // a gap is not a reordering by itself
		{"a", 2, true},  // 2 after 3
		{"b", 2, false},
		{"b", 1, true}, // 1 after 2
		{"a", 4, false},
		{"a", 1, true}, // a redelivered 1 after 4
		{"b", 3, false},
		{"a", 4, false}, // a redelivered highest is not overtaken
	}
	for i, s := range steps {
		require.Equal(t, s.late, tr.observe(s.order, s.seq), "step %d: order %s seq %d", i, s.order, s.seq)
	}
	require.Equal(t, 3, tr.outOfOrder)
}

// TestBacklogKeepsEachOrderInSequence: n events over m orders, each order's
// numbered 1.. in listed order, the same layout for the same seed.
func TestBacklogKeepsEachOrderInSequence(t *testing.T) {
	t.Parallel()
	events, err := backlog(103, 10, 7)
	require.NoError(t, err)
	require.Len(t, events, 103)
	next := map[string]int64{}
	ids := map[uuid.UUID]bool{}
	for _, e := range events {
		next[e.OrderID]++
		require.Equal(t, next[e.OrderID], e.Seq, "order %s", e.OrderID)
		ids[e.ID] = true
	}
	require.Len(t, next, 10)
	require.Len(t, ids, 103)
	layout := func(seed uint64) []int64 {
		es, err := backlog(103, 10, seed)
		require.NoError(t, err)
		var seqs []int64
		for _, e := range es {
			seqs = append(seqs, e.Seq)
		}
		return seqs
	}
	require.Equal(t, layout(7), layout(7))
	require.NotEqual(t, layout(7), layout(8))
	// Seed 0 is round robin: every order's first event, then every order's second.
	rr := layout(0)
	for i, seq := range rr {
		require.Equal(t, int64(i/10+1), seq, "event %d", i)
	}
}

func TestRoundOrderAlternates(t *testing.T) {
	t.Parallel()
	cs := contenders()
	names := func(cs []Contender) (out []string) {
		for _, c := range cs {
			out = append(out, c.Name())
		}
		return out
	}
	first, second := names(roundOrder(cs, 0)), names(roundOrder(cs, 1))
	require.Equal(t, contenderNames(), first)
	slices.Reverse(second)
	require.Equal(t, first, second)
}

// logSink remembers what it was given, in order.
type logSink struct {
	mu  sync.Mutex
	ids []uuid.UUID
}

func (s *logSink) Deliver(_ context.Context, e Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, e.ID)
	return nil
}

// TestEveryContenderDeliversEachEventOnce drains a small backlog through each
// contender, with both profiles, into a counting sink, after the write
// phase left its events in the table: every event of the backlog arrives
// exactly once, and the write phase's are not counted. outflow (one event of an order in flight at a time),
// Watermill (one subscriber, one message at a time) and DBOS (a queue
// partition per order, one workflow at a time) must keep every order in
// sequence; River may not, and its count is only logged.
func TestEveryContenderDeliversEachEventOnce(t *testing.T) {
	t.Parallel()
	const n, m = 300, 30
	for _, c := range contenders() {
		t.Run(c.Name(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			url := testdb.AdminURL()
			if c.Name() == (outflowCDC{}).Name() {
				url = testdb.Logical(t) // logical decoding; the shared server has wal_level=replica
			}
			srv, err := newServer(ctx, url)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, srv.Close(context.Background())) })
			b := &bench{srv: srv, res: newResults(), stderr: io.Discard, start: time.Now()}
			name, cfg, err := srv.scratch(ctx, c, 0)
			require.NoError(t, err)
			defer srv.Drop(context.Background(), name) //nolint:errcheck // close drops leftovers

			// The write phase runs first, as in a round, and leaves its
			// events (20 warm-up and 10 timed) in the table: the first
			// drain delivers them too, and must not count them.
			_, err = write(ctx, c, cfg, 10)
			require.NoError(t, err)
			for i, p := range []Profile{Default, Tuned} {
				log := &logSink{}
				res, err := b.drain(ctx, c, cfg, p, n, m, uint64(i+1), log)
				require.NoError(t, err, p.String())
				require.Equal(t, n, res.tally.distinct, p.String())
				require.Equal(t, n, res.tally.deliveries, "%s: a duplicate delivery", p)
				if p == Default {
					require.GreaterOrEqual(t, res.tally.others, 30, "the write phase's events, delivered but not counted")
				} else {
					require.Zero(t, res.tally.others, "nothing left from an earlier phase")
				}
				require.Len(t, log.ids, n+res.tally.others)
				if c.Name() == "river" {
					t.Logf("%s: %d of %d events out of their order's sequence", p, res.tally.outOfOrder, n)
					continue
				}
				require.Zero(t, res.tally.outOfOrder, "%s: %s delivered an order's events out of sequence", c.Name(), p)
			}
		})
	}
}

// TestOverlapRoundCountsEachContendersReorders runs the
// overlapping-transactions round on each contender: every event arrives
// once; outflow's three sources and DBOS keep each order in sequence; Watermill,
// whose subscriber reads by transaction id, delivers each order's events
// [2 1], so its count is not zero (the round and the counter can see a
// reordering); River's count is only logged.
func TestOverlapRoundCountsEachContendersReorders(t *testing.T) {
	t.Parallel()
	const orders = 20
	for _, c := range contenders() {
		t.Run(c.Name(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			url := testdb.AdminURL()
			if c.Name() == (outflowCDC{}).Name() {
				url = testdb.Logical(t)
			}
			srv, err := newServer(ctx, url)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, srv.Close(context.Background())) })
			b := &bench{srv: srv, res: newResults(), stderr: io.Discard, start: time.Now()}
			// Round 7 names scratch databases no other test's round does.
			name, cfg, err := srv.scratch(ctx, c, 7)
			require.NoError(t, err)
			defer srv.Drop(context.Background(), name) //nolint:errcheck // close drops leftovers

			got, err := b.overlap(ctx, c, cfg, orders, nil)
			require.NoError(t, err)
			require.Equal(t, 2*orders, got.distinct)
			require.Equal(t, 2*orders, got.deliveries, "a duplicate delivery")
			switch c.Name() {
			case "river":
				t.Logf("%d of %d orders delivered out of sequence", got.outOfOrder, orders)
			case "watermill":
				require.Positive(t, got.outOfOrder, "Watermill reads by transaction id: sequence 2 (the earlier xid) before 1")
				t.Logf("%d of %d orders delivered out of sequence", got.outOfOrder, orders)
			default:
				require.Zero(t, got.outOfOrder, "%s delivered an order's events out of sequence", c.Name())
			}
		})
	}
}

// TestStatements: every statement of peers.sql is bound in sql.go and reads
// the columns the database describes, on a database with River's,
// Watermill's and DBOS's tables beside outflow's.
func TestStatements(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	for _, c := range []Contender{&riverQueue{}, watermillSQL{}, &dbosQueue{}} {
		require.NoError(t, c.Install(t.Context(), pool), c.Name())
	}
	testdb.CheckStatementsOn(t, pool, queries, statements...)
}

// TestJetStreamPhaseReadsEachEventBack runs the JetStream phase (drain and
// handoff into a stream on the machine's NATS server, OUTFLOW_NATS_URL)
// for outflow's poll and log sources and Watermill (its forwarder): the
// stream's consumer reads every event back, once, each order in its
// sequence (but the forwarder's overlapping orders, which it reorders),
// and the figures are recorded.
func TestJetStreamPhaseReadsEachEventBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	js, err := startJetStream(ctx)
	require.NoError(t, err, "the test needs NATS with JetStream (OUTFLOW_NATS_URL, default nats://127.0.0.1:4222)")
	t.Cleanup(func() { require.NoError(t, js.stop(context.Background())) })
	for _, c := range []Contender{outflowPoll{}, outflowLog{}, watermillSQL{}} {
		t.Run(c.Name(), func(t *testing.T) {
			srv, err := newServer(ctx, testdb.AdminURL())
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, srv.Close(context.Background())) })
			b := &bench{srv: srv, res: newResults(), stderr: io.Discard, start: time.Now(), jetstream: js,
				cfg: config{events: 300, orders: 30, jetstreamEvents: 300, jetstreamRate: 20, duration: time.Second, overlapOrders: 10}}
			// Round 9 names scratch databases the parallel tests' round 0 does not.
			name, cfg, err := srv.scratch(ctx, c, 9)
			require.NoError(t, err)
			defer srv.Drop(context.Background(), name) //nolint:errcheck // close drops leftovers

			require.NoError(t, b.jetstreamRound(ctx, c, cfg, 9, 1))
			v := b.res.values[c.Name()]
			require.Len(t, v["jetstream_events_per_s"], 1)
			require.Positive(t, v["jetstream_events_per_s"][0])
			require.Equal(t, []float64{0, 0}, v["jetstream_out_of_order"], "drain and handoff: each order in sequence at the consumer")
			require.Equal(t, []float64{0, 0, 0}, v["jetstream_stored_twice"], "drain, handoff and overlap")
			require.Len(t, v["jetstream_overlap_out_of_order"], 1)
			if c.Name() == "watermill" {
				// The forwarder reads its topic by transaction id and publishes sequence 2 first.
				require.Positive(t, v["jetstream_overlap_out_of_order"][0], "the forwarder kept every overlapping order in sequence")
			} else {
				require.Zero(t, v["jetstream_overlap_out_of_order"][0], "%s: an overlapping order out of sequence at the consumer", c.Name())
			}
			require.Len(t, b.res.samples[c.Name()]["jetstream_handoff"], 20, "one second at 20/s after the warm-up")
		})
	}
}

// TestStreamReaderCountsAnOrderOutOfSequence: the stream's consumer counts
// an order's event stored before its predecessor.
func TestStreamReaderCountsAnOrderOutOfSequence(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, err := startJetStream(ctx)
	require.NoError(t, err, "the test needs NATS with JetStream (OUTFLOW_NATS_URL)")
	t.Cleanup(func() { require.NoError(t, js.stop(context.Background())) })
	sink, reader, err := js.phase(ctx, 3)
	require.NoError(t, err)
	order := uuid.NewString()
	for _, seq := range []int64{2, 1, 3} {
		require.NoError(t, sink.Deliver(ctx, Event{ID: uuid.New(), OrderID: order, Seq: seq, Payload: []byte(`{}`)}))
	}
	seen, err := reader.wait(ctx)
	require.NoError(t, err)
	require.Equal(t, tally{distinct: 3, deliveries: 3, outOfOrder: 1, firstOutOfOrder: 1}, seen)
}

// TestWatermillForwarderDrainsToJetStream drains a small backlog through
// Watermill's contender of the JetStream phase, its forwarder: each event
// reaches the recorder once, after its PubAck, and the stream's consumer
// reads each back once, each order in its sequence, as a message that
// watermill-nats published (its _watermill_message_uuid header) on the
// order's subject with Nats-Msg-Id = the event id.
func TestWatermillForwarderDrainsToJetStream(t *testing.T) {
	t.Parallel()
	const n, m = 300, 30
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	js, err := startJetStream(ctx)
	require.NoError(t, err, "the test needs NATS with JetStream (OUTFLOW_NATS_URL)")
	t.Cleanup(func() { require.NoError(t, js.stop(context.Background())) })
	srv, err := newServer(ctx, testdb.AdminURL())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close(context.Background())) })
	b := &bench{srv: srv, res: newResults(), stderr: io.Discard, start: time.Now()}
	// Round 8 names a scratch database no other test's round does.
	name, cfg, err := srv.scratch(ctx, watermillSQL{}, 8)
	require.NoError(t, err)
	defer srv.Drop(context.Background(), name) //nolint:errcheck // close drops leftovers

	sink, reader, err := js.phase(ctx, n)
	require.NoError(t, err)
	c, next := jetstreamContender(watermillSQL{}, sink)
	require.IsType(t, watermillForwarder{}, c)
	require.Nil(t, next, "the forwarder publishes; natspub's sink must not publish too")
	res, err := b.drain(ctx, c, cfg, Tuned, n, m, 3, next)
	require.NoError(t, err)
	require.Equal(t, tally{distinct: n, deliveries: n}, res.tally, "at the PubAck: once each, each order in sequence")
	seen, err := reader.wait(ctx)
	require.NoError(t, err)
	require.Equal(t, tally{distinct: n, deliveries: n}, seen, "at the stream's consumer: once each, each order in sequence")

	cons, err := js.js.OrderedConsumer(ctx, js.stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{sink.target.prefix + ".>"}})
	require.NoError(t, err)
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(30*time.Second))
	require.NoError(t, err)
	got := 0
	for msg := range batch.Messages() {
		got++
		h := msg.Headers()
		id := h.Get(nats.MsgIdHdr)
		require.NotEmpty(t, id)
		require.Equal(t, id, h.Get(wmnats.WatermillUUIDHdr), "Nats-Msg-Id is the message UUID, the event id")
		subject, err := natspub.Subject(sink.target.prefix, orders.AggregateType, h.Get(natspub.HeaderAggregateID))
		require.NoError(t, err)
		require.Equal(t, subject, msg.Subject())
		require.Equal(t, orders.EventOrderCreated, h.Get(natspub.HeaderEventType))
		require.NotEmpty(t, msg.Data(), "the OrderCreated body")
	}
	require.NoError(t, batch.Error())
	require.Equal(t, n, got)
}
