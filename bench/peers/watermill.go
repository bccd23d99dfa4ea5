package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wsql "github.com/ThreeDotsLabs/watermill-sql/v4/pkg/sql"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// watermillTopic is the topic of order events (table watermill_order_events).
const watermillTopic = "order_events"

// Watermill's tuned settings, both documented on their fields.
const (
	// watermillTunedBatch: DefaultPostgreSQLSchema.SubscribeBatchSize
	// ("1 is the safest value, but it may have a negative impact on
	// performance"); default 100.
	watermillTunedBatch = 1000
	// watermillTunedPoll: SubscriberConfig.PollInterval, the wait after a
	// query that found nothing; default 1s, which is the handoff latency of
	// an idle subscriber.
	watermillTunedPoll = 10 * time.Millisecond
)

// watermillSQL is Watermill used as its documentation recommends for a
// transactional outbox: watermill-sql's Publisher on the order's transaction
// (sql.TxFromPgx), the Postgres schema and offsets adapters, and the SQL
// Subscriber reading the table, its messages handed to the sink and acked.
// The forwarder component wraps the same subscriber to republish to another
// Pub/Sub; with a sink in-process there is nothing to republish to, so the
// no-op and Temporal phases hand messages to the sink, and the JetStream
// phase, which has a Pub/Sub to republish to, runs the forwarder instead
// (watermillForwarder, forwarder.go).
type watermillSQL struct{}

func (watermillSQL) Name() string { return "watermill" }

func watermillSchema(p Profile) wsql.DefaultPostgreSQLSchema {
	if p == Tuned {
		return wsql.DefaultPostgreSQLSchema{SubscribeBatchSize: watermillTunedBatch}
	}
	return wsql.DefaultPostgreSQLSchema{}
}

func watermillSubscriber(pool *pgxpool.Pool, p Profile) (*wsql.Subscriber, error) {
	cfg := wsql.SubscriberConfig{
		SchemaAdapter:  watermillSchema(p),
		OffsetsAdapter: wsql.DefaultPostgreSQLOffsetsAdapter{},
	}
	if p == Tuned {
		cfg.PollInterval = watermillTunedPoll
	}
	return wsql.NewSubscriber(wsql.BeginnerFromPgx(pool), cfg, watermill.NewSlogLogger(quietLogger))
}

// Install creates the messages and offsets tables of the topic and of the
// forwarder's topic (the JetStream phase's, see watermillForwarder), as the
// subscriber's InitializeSchema would on its first Subscribe; a publisher on
// a transaction may not create them (AutoInitializeSchema is refused there).
func (watermillSQL) Install(_ context.Context, pool *pgxpool.Pool) error {
	sub, err := watermillSubscriber(pool, Default)
	if err != nil {
		return err
	}
	defer sub.Close()
	for _, topic := range []string{watermillTopic, watermillForwarderTopic} {
		if err := sub.SubscribeInitialize(topic); err != nil {
			return err
		}
	}
	return nil
}

func (watermillSQL) Enqueue(ctx context.Context, tx pgx.Tx, _ Profile, order *pgx.Batch, events []Event) error {
	if order.Len() > 0 {
		if err := tx.SendBatch(ctx, order).Close(); err != nil {
			return err
		}
	}
	// A publisher per transaction, as watermill-sql's examples do: its
	// ContextExecutor is the transaction.
	pub, err := wsql.NewPublisher(wsql.TxFromPgx(tx), wsql.PublisherConfig{SchemaAdapter: watermillSchema(Default)}, nil)
	if err != nil {
		return err
	}
	msgs := make([]*message.Message, len(events))
	for i, e := range events {
		m := message.NewMessage(e.ID.String(), message.Payload(e.Payload))
		m.Metadata.Set("order_id", e.OrderID)
		m.Metadata.Set("seq", strconv.FormatInt(e.Seq, 10))
		m.SetContext(ctx)
		msgs[i] = m
	}
	return pub.Publish(watermillTopic, msgs...)
}

func (watermillSQL) Start(ctx context.Context, pool *pgxpool.Pool, sink Sink, p Profile) (func(context.Context) error, error) {
	sub, err := watermillSubscriber(pool, p)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	msgs, err := sub.Subscribe(sctx, watermillTopic)
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range msgs {
			e, err := watermillEvent(m)
			if err == nil {
				err = sink.Deliver(m.Context(), e)
			}
			if err != nil {
				m.Nack()
				continue
			}
			m.Ack()
		}
	}()
	return func(context.Context) error {
		// Close before cancel: a cancelled context would fail the ack query
		// of the batch in progress, and the batch would come again.
		err := sub.Close()
		cancel()
		<-done
		return err
	}, nil
}

func watermillEvent(m *message.Message) (Event, error) {
	id, err := uuid.Parse(m.UUID)
	if err != nil {
		return Event{}, fmt.Errorf("watermill message %q: %w", m.UUID, err)
	}
	seq, err := strconv.ParseInt(m.Metadata.Get("seq"), 10, 64)
	if err != nil {
		return Event{}, errors.New("watermill message without a seq")
	}
	return Event{ID: id, OrderID: m.Metadata.Get("order_id"), Seq: seq, Payload: []byte(m.Payload)}, nil
}

func (watermillSQL) Pending(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	return pending(ctx, pool, qWatermillPending)
}

// Tables: both topics' messages and offsets tables.
func (watermillSQL) Tables() []string { return []string{"public.watermill\\_%"} }

func (watermillSQL) Settings(p Profile) string {
	if p == Tuned {
		return fmt.Sprintf("SubscribeBatchSize %d (documented as the performance knob), PollInterval %s; "+
			"one subscriber, as the offsets table's row lock admits one consumer per consumer group at a time",
			watermillTunedBatch, watermillTunedPoll)
	}
	return "SubscribeBatchSize 100, PollInterval 1s, AckDeadline 30s (the defaults); Postgres schema and offsets adapters, one subscriber"
}
