package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/outflow/outflow/internal/bench/benchstat"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/natspub"
)

// natsURLEnv names the NATS server of the JetStream phase, as for the
// starter.
const natsURLEnv = "OUTFLOW_NATS_URL"

// jetstreamSink publishes each event as outflow's relay does with
// OUTFLOW_SINKS=jetstream, through outflow's own publisher (natspub): the
// subject <prefix>.order.<order id>, Nats-Msg-Id = the event id, and the
// PubAck as the acknowledgement. The handlers of outflow's sources, of
// River and of DBOS (its workflow's step) send that publish, as with the
// Temporal sink. Watermill has a way
// of its own from its SQL topic to NATS, its forwarder component with
// watermill-nats' JetStream publisher, and the phase runs that instead
// (jetstreamNative, watermillForwarder): the same subjects, headers and
// Nats-Msg-Id, published by Watermill's code.
type jetstreamSink struct {
	pub    *natspub.Publisher
	target jetstreamTarget
}

// jetstreamTarget is where one phase publishes: the NATS server and the
// phase's subject prefix (its subjects are the stream's).
type jetstreamTarget struct {
	url, prefix string
}

// jetstreamNative is a contender with a way of its own from its tables to
// a JetStream stream (Watermill's forwarder). The JetStream phase runs the
// contender JetStream returns, which publishes to t itself and hands the
// sink each event once the stream acknowledged it, in place of the
// contender whose handler calls the phase's natspub sink.
type jetstreamNative interface {
	JetStream(t jetstreamTarget) Contender
}

// jetstreamContender is what the phase runs for c with sink: c's own way to
// the stream and no sink behind the recorder, or c and sink.
func jetstreamContender(c Contender, sink jetstreamSink) (Contender, Sink) {
	if n, ok := c.(jetstreamNative); ok {
		return n.JetStream(sink.target), nil
	}
	return c, sink
}

func (s jetstreamSink) Deliver(ctx context.Context, e Event) error {
	return s.pub.Publish(ctx, outbox.Event{
		ID: e.ID, AggregateType: orders.AggregateType, AggregateID: e.OrderID, Sequence: e.Seq,
		Type: orders.EventOrderCreated, SchemaVersion: orders.OrderCreatedV1, Payload: e.Payload,
		OccurredAt: time.Now(),
	})
}

// jetstreamBench is one stream of this run's own on the NATS server of
// OUTFLOW_NATS_URL (file storage and the 2-minute duplicate window, as the
// starter creates it), deleted when the bench ends. Each phase publishes
// under a subject prefix of its own, read back by a consumer of its own.
type jetstreamBench struct {
	url    string
	nc     *nats.Conn
	js     jetstream.JetStream
	stream string
	phases atomic.Int64
}

func startJetStream(ctx context.Context) (*jetstreamBench, error) {
	url := os.Getenv(natsURLEnv)
	if url == "" {
		url = natspub.URLDefault
	}
	nc, err := nats.Connect(url, nats.Name("outflow-peers"))
	if err != nil {
		return nil, fmt.Errorf("%s=%s: connect to NATS: %w", natsURLEnv, url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	stream := fmt.Sprintf("PEERS_%d_%s", os.Getpid(), strings.ToUpper(uuid.NewString()[:8]))
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: stream, Subjects: []string{strings.ToLower(stream) + ".>"},
		Storage: jetstream.FileStorage, Duplicates: natspub.ServerWindowDefault,
	}); err != nil {
		nc.Close()
		return nil, fmt.Errorf("create stream %s on %s: %w", stream, url, err)
	}
	return &jetstreamBench{url: url, nc: nc, js: js, stream: stream}, nil
}

func (j *jetstreamBench) stop(ctx context.Context) error {
	defer j.nc.Close()
	if err := j.js.DeleteStream(ctx, j.stream); err != nil {
		return fmt.Errorf("delete stream %s: %w", j.stream, err)
	}
	return nil
}

// phase returns a sink publishing under a fresh subject prefix, and the
// stream's consumer of that prefix, already reading: it expects want
// distinct events.
func (j *jetstreamBench) phase(ctx context.Context, want int) (jetstreamSink, *streamReader, error) {
	prefix := strings.ToLower(j.stream) + ".p" + strconv.FormatInt(j.phases.Add(1), 10)
	pub, err := natspub.New(ctx, j.js, natspub.Config{Stream: j.stream, SubjectPrefix: prefix})
	if err != nil {
		return jetstreamSink{}, nil, err
	}
	r, err := j.read(ctx, prefix, want)
	return jetstreamSink{pub: pub, target: jetstreamTarget{url: j.url, prefix: prefix}}, r, err
}

// streamReader is a consumer of one phase's subjects, from the stream's
// start, in stream order (JetStream's ordered consumer): it counts what a
// consumer of the stream sees, an order's events out of their sequence and
// a message stored twice included.
type streamReader struct {
	rec  *recorder
	stop func()
	errs atomic.Int64
}

func (j *jetstreamBench) read(ctx context.Context, prefix string, want int) (*streamReader, error) {
	cons, err := j.js.OrderedConsumer(ctx, j.stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{prefix + ".>"}})
	if err != nil {
		return nil, fmt.Errorf("consumer of %s.>: %w", prefix, err)
	}
	r := &streamReader{rec: newRecorder(nil, want)}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		h := m.Headers()
		id, err := uuid.Parse(h.Get(nats.MsgIdHdr))
		seq, serr := strconv.ParseInt(h.Get(natspub.HeaderSequence), 10, 64)
		if err != nil || serr != nil {
			r.errs.Add(1)
			return
		}
		_ = r.rec.Deliver(ctx, Event{ID: id, OrderID: h.Get(natspub.HeaderAggregateID), Seq: seq})
	})
	if err != nil {
		return nil, fmt.Errorf("consume %s.>: %w", prefix, err)
	}
	r.stop = cc.Stop
	return r, nil
}

// wait waits until the consumer has seen every event, then stops it and
// says what it saw.
func (r *streamReader) wait(ctx context.Context) (tally, error) {
	wctx, cancel := context.WithTimeout(ctx, handoffTimeout)
	defer cancel()
	err := r.rec.wait(wctx)
	r.stop()
	t := r.rec.tally()
	switch {
	case err != nil:
		return t, fmt.Errorf("the stream's consumer saw %d of %d events: %w", t.distinct, r.rec.want, err)
	case r.errs.Load() > 0:
		return t, fmt.Errorf("the stream's consumer read %d messages without the publisher's headers", r.errs.Load())
	}
	return t, nil
}

// jetstreamRound is the JetStream phase of a contender's round: a drain of
// -jetstream-events into the stream, a handoff at -jetstream-rate and the
// overlapping-transactions round, all with the tuned settings, each read
// back by a consumer of the stream. A
// jetstreamNative contender (Watermill) runs its own way to the stream.
func (b *bench) jetstreamRound(ctx context.Context, c Contender, dbcfg *pgxpool.Config, r int, layout uint64) error {
	jn, n, m := b.cfg.jetstreamEvents, b.cfg.events, b.cfg.orders
	b.progress("round %d %s: drain %d events into JetStream (a publish and its PubAck each), tuned settings", r+1, c.Name(), jn)
	sink, reader, err := b.jetstream.phase(ctx, jn)
	if err != nil {
		return err
	}
	jc, next := jetstreamContender(c, sink)
	d, err := b.drain(ctx, jc, dbcfg, Tuned, jn, max(1, jn/(n/m)), layout, next)
	if err != nil {
		return fmt.Errorf("jetstream drain: %w", err)
	}
	seen, err := reader.wait(ctx)
	if err != nil {
		return fmt.Errorf("jetstream drain: %w", err)
	}
	rate := float64(jn) / d.elapsed.Seconds()
	b.progress("  %.0f events/s; at the stream's consumer %d out of order, %d stored twice", rate, seen.outOfOrder, seen.deliveries-seen.distinct)
	b.res.add(c.Name(), "jetstream_events_per_s", rate)
	b.res.add(c.Name(), "jetstream_out_of_order", float64(seen.outOfOrder))
	b.res.add(c.Name(), "jetstream_stored_twice", float64(seen.deliveries-seen.distinct))

	rateH := b.cfg.jetstreamRate
	b.progress("round %d %s: handoff into JetStream at %d orders/s for %s", r+1, c.Name(), rateH, b.cfg.duration)
	sink, reader, err = b.jetstream.phase(ctx, rateH+int(b.cfg.duration.Seconds()*float64(rateH)))
	if err != nil {
		return err
	}
	jc, next = jetstreamContender(c, sink)
	lat, err := b.handoff(ctx, jc, dbcfg, Tuned, rateH, b.cfg.duration, next)
	if err != nil {
		return fmt.Errorf("jetstream handoff: %w", err)
	}
	seen, err = reader.wait(ctx)
	if err != nil {
		return fmt.Errorf("jetstream handoff: %w", err)
	}
	b.res.add(c.Name(), "jetstream_out_of_order", float64(seen.outOfOrder))
	b.res.add(c.Name(), "jetstream_stored_twice", float64(seen.deliveries-seen.distinct))
	b.progress("  p50 %.1f ms, p99 %.1f ms", benchstat.Ms(benchstat.Percentile(lat, 50)), benchstat.Ms(benchstat.Percentile(lat, 99)))
	b.res.addSamples(c.Name(), "jetstream_handoff", lat)

	ov := b.cfg.overlapOrders
	b.progress("round %d %s: overlapping transactions into JetStream on %d orders, tuned settings", r+1, c.Name(), ov)
	sink, reader, err = b.jetstream.phase(ctx, 2*ov)
	if err != nil {
		return err
	}
	jc, next = jetstreamContender(c, sink)
	if _, err := b.overlap(ctx, jc, dbcfg, ov, next); err != nil {
		return fmt.Errorf("jetstream overlap: %w", err)
	}
	seen, err = reader.wait(ctx)
	if err != nil {
		return fmt.Errorf("jetstream overlap: %w", err)
	}
	b.progress("  at the stream's consumer %d out of order, %d stored twice", seen.outOfOrder, seen.deliveries-seen.distinct)
	b.res.add(c.Name(), "jetstream_overlap_out_of_order", float64(seen.outOfOrder))
	b.res.add(c.Name(), "jetstream_stored_twice", float64(seen.deliveries-seen.distinct))
	return nil
}
