package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/components/forwarder"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox/natspub"
)

// watermillForwarderTopic is the SQL topic of the forwarder's envelopes
// (table watermill_order_events_forwarder), a topic of its own so that the
// forwarder never reads the plain messages the other phases leave in
// watermillTopic (it would nack them for ever).
const watermillForwarderTopic = "order_events_forwarder"

// watermillForwarder is Watermill's contender in the JetStream phase: its
// own outbox-to-broker path, the forwarder component
// (watermill/components/forwarder) as its docs describe it.
//
//   - In the order's transaction, forwarder.NewPublisher wraps watermill-sql's
//     Publisher (sql.TxFromPgx): each event is a message whose UUID is the
//     event id, whose payload is the OrderCreated body and whose metadata is
//     the headers natspub sets, published to its destination topic, the
//     subject <prefix>.order.<order id>; the wrapper stores it as the
//     forwarder's JSON envelope (destination_topic, uuid, payload, metadata)
//     under a new UUID on the SQL topic watermillForwarderTopic.
//   - forwarder.NewForwarder reads that topic with watermill-sql's Subscriber
//     (tuned settings, as watermillSQL's), unwraps each envelope and
//     publishes the message to its destination topic with watermill-nats/v2's
//     publisher (pkg/nats, JetStream enabled, the one its docs recommend for
//     production; pkg/jetstream is marked beta), then acks the envelope.
//
// The published message: subject = the destination topic (watermill-nats'
// default subject calculator); body = the payload; headers = the metadata
// (Outflow-Event-Type, -Schema-Version, -Aggregate-Type, -Aggregate-Id,
// -Aggregate-Sequence, -Occurred-At, as natspub writes them) plus Watermill's
// _watermill_message_uuid (the NATSMarshaler's); Nats-Msg-Id = the message
// UUID, the event id (JetStreamConfig.TrackMsgId), so the stream's duplicate
// window absorbs a republish. Publish returns on the PubAck
// (JetStreamContext.PublishMsg). What natspub does and this does not: the
// expected-stream check (WithExpectStream), a context on the publish (the
// client's default JetStream timeout applies), telling a duplicate PubAck
// apart, and classifying errors as permanent or transient; the forwarder
// nacks the envelope on any error and the subscriber delivers it again.
//
// The phase's sink is not called to publish: the JetStream publisher is
// wrapped so that each event reaches the sink (the bench's recorder) once its
// publish returned, so drain and handoff end at the PubAck as for the other
// contenders.
type watermillForwarder struct {
	target jetstreamTarget
}

// JetStream is Watermill's own way to the stream, its forwarder.
func (watermillSQL) JetStream(t jetstreamTarget) Contender { return watermillForwarder{target: t} }

// Name is watermillSQL's: the forwarder's figures are Watermill's
// jetstream_* figures.
func (watermillForwarder) Name() string { return watermillSQL{}.Name() }

func (watermillForwarder) Tables() []string { return watermillSQL{}.Tables() }

// Install creates both topics' tables (watermillSQL's Install).
func (watermillForwarder) Install(ctx context.Context, pool *pgxpool.Pool) error {
	return watermillSQL{}.Install(ctx, pool)
}

func (f watermillForwarder) Enqueue(ctx context.Context, tx pgx.Tx, _ Profile, order *pgx.Batch, events []Event) error {
	if order.Len() > 0 {
		if err := tx.SendBatch(ctx, order).Close(); err != nil {
			return err
		}
	}
	sqlPub, err := wsql.NewPublisher(wsql.TxFromPgx(tx), wsql.PublisherConfig{SchemaAdapter: watermillSchema(Default)}, nil)
	if err != nil {
		return err
	}
	pub := forwarder.NewPublisher(sqlPub, forwarder.PublisherConfig{ForwarderTopic: watermillForwarderTopic})
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for _, e := range events {
		subject, err := natspub.Subject(f.target.prefix, orders.AggregateType, e.OrderID)
		if err != nil {
			return err
		}
		m := message.NewMessage(e.ID.String(), message.Payload(e.Payload))
		m.Metadata.Set(natspub.HeaderEventType, orders.EventOrderCreated)
		m.Metadata.Set(natspub.HeaderSchemaVersion, strconv.Itoa(orders.OrderCreatedV1))
		m.Metadata.Set(natspub.HeaderAggregateType, orders.AggregateType)
		m.Metadata.Set(natspub.HeaderAggregateID, e.OrderID)
		m.Metadata.Set(natspub.HeaderSequence, strconv.FormatInt(e.Seq, 10))
		m.Metadata.Set(natspub.HeaderOccurredAt, now)
		m.SetContext(ctx)
		// One Publish per event: the forwarder's publisher takes one
		// destination topic per call, and each order has its own subject.
		if err := pub.Publish(subject, m); err != nil {
			return err
		}
	}
	return nil
}

func (f watermillForwarder) Start(ctx context.Context, pool *pgxpool.Pool, sink Sink, p Profile) (func(context.Context) error, error) {
	logger := watermill.NewSlogLogger(quietLogger)
	sub, err := watermillSubscriber(pool, p)
	if err != nil {
		return nil, err
	}
	natsPub, err := wmnats.NewPublisher(wmnats.PublisherConfig{
		URL:         f.target.url,
		NatsOptions: []nats.Option{nats.Name("outflow-peers-watermill-forwarder")},
		JetStream:   wmnats.JetStreamConfig{TrackMsgId: true},
	}, logger)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("watermill-nats publisher on %s: %w", f.target.url, err), sub.Close())
	}
	fwd, err := forwarder.NewForwarder(sub, ackedPublisher{Publisher: natsPub, sink: sink}, logger,
		forwarder.Config{ForwarderTopic: watermillForwarderTopic})
	if err != nil {
		return nil, errors.Join(err, sub.Close(), natsPub.Close())
	}
	rctx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- fwd.Run(rctx) }()
	select {
	case <-fwd.Running():
	case err := <-ran:
		cancel()
		return nil, errors.Join(fmt.Errorf("watermill forwarder: %w", err), natsPub.Close())
	}
	return func(context.Context) error {
		// The router's Close cancels the context of its Run itself, then
		// closes the subscriber and waits (CloseTimeout) for the handler in
		// progress; a poll in flight then logs "could not commit tx for
		// querying message ... context canceled". The bench settles before
		// it stops a contender, so no envelope is in hand by then.
		err := fwd.Close()
		cancel()
		return errors.Join(err, <-ran, natsPub.Close())
	}, nil
}

// ackedPublisher hands each message its Publisher published (returned on
// the PubAck) to sink, as the event it carries.
type ackedPublisher struct {
	message.Publisher
	sink Sink
}

func (p ackedPublisher) Publish(topic string, msgs ...*message.Message) error {
	if err := p.Publisher.Publish(topic, msgs...); err != nil {
		return err
	}
	for _, m := range msgs {
		e, err := forwardedEvent(m)
		if err == nil {
			err = p.sink.Deliver(m.Context(), e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// forwardedEvent is the event a message unwrapped by the forwarder carries.
func forwardedEvent(m *message.Message) (Event, error) {
	id, err := uuid.Parse(m.UUID)
	if err != nil {
		return Event{}, fmt.Errorf("forwarded message %q: %w", m.UUID, err)
	}
	seq, err := strconv.ParseInt(m.Metadata.Get(natspub.HeaderSequence), 10, 64)
	if err != nil {
		return Event{}, fmt.Errorf("forwarded message %s without a sequence", m.UUID)
	}
	return Event{ID: id, OrderID: m.Metadata.Get(natspub.HeaderAggregateID), Seq: seq, Payload: []byte(m.Payload)}, nil
}

func (watermillForwarder) Pending(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	return pending(ctx, pool, qWatermillForwarderPending)
}

func (watermillForwarder) Settings(p Profile) string {
	return "forwarder (watermill/components/forwarder): " + watermillSQL{}.Settings(p) +
		"; watermill-nats/v2 pkg/nats publisher, JetStream with TrackMsgId"
}
