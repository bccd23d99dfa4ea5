// Package natsconsumer is the consumer side of the JetStream sink
// (outbox/natspub): a durable pull consumer that applies each message in
// the caller's own PostgreSQL transaction, deduplicated by the inbox
// (package inbox), and acknowledges the message only after that
// transaction committed.
//
// It sits beside package inbox rather than beside the publisher because it
// is what a consuming service links: the inbox, its own database and a
// NATS connection, nothing of the relay.
//
// # The guarantee
//
// For each message, in one transaction: [inbox.Inbox.Record] of the event
// ID (the message's Nats-Msg-Id) under Config.Name, then, the first time
// only, the caller's Apply and the aggregate's new position
// ([Positions.SetApplied]); then COMMIT, then the ack. A crash before the
// commit leaves nothing and the message comes again; a crash after it
// (jetstream.consumer.after_commit) leaves the effect committed and the
// message unacknowledged: it comes again after AckWait and the inbox tells
// it is a duplicate, so it is acknowledged without effect. Each event is
// applied once, however often the stream or the relay delivers it, for as
// long as the inbox keeps its row (the inbox's retention).
//
// # Order
//
// The publisher puts each aggregate on a subject of its own, and the
// relay publishes an aggregate's next event only after the stream
// acknowledged the one before, so one subject's messages are in the
// aggregate's sequence in the stream. The consumer keeps that order and
// checks it: the caller's [Positions] say the sequence of the aggregate's
// last applied event, in the same transaction, and a message whose
// sequence is more than one past it is a gap: it is not applied, its
// transaction rolls back, it is logged ("gap in aggregate sequence") and
// negatively acknowledged with Config.RetryDelay, so it comes again after
// the missing one (a predecessor whose apply failed and is being retried).
// A gap that never closes (a message the stream lost to its limits or a
// purge) keeps coming back with that log line until an operator acts. An
// aggregate the consumer never applied starts at sequence 1. A new event
// whose sequence is at or behind the position (another event already took
// that place) is terminated with an error log and not applied.
//
// # An operator's skip
//
// An event an operator gave up at the producer (outboxctl skip) reaches the
// stream as a tombstone (header Outflow-Skipped: true, no body) in the
// event's place in its aggregate's sequence. The consumer takes it like an
// event: the inbox records its ID, and in the same transaction
// Config.Skipped (when set) is called instead of Apply, with
// Message.Skipped set and no payload, and the position moves past it; it
// is logged ("skipped at the producer"). So the aggregate's later events
// are applied rather than held back by a gap. A tombstone of an event the
// consumer applied already (it reached the stream before it was skipped)
// is a duplicate for the inbox and changes nothing.
//
// # Encrypted payloads
//
// A message whose body a natspub.PayloadEncoder encoded (header
// Outflow-Payload-Encoding, e.g. the starter's payload codec) is decoded
// with Config.Decoder before anything else; Apply sees the JSON payload.
// Without a Decoder, or when decoding fails (a key this process lacks, the
// key store unreachable), the message is not applied: it is logged and
// delivered again after Config.RetryDelay, so that a consumer given the
// key still applies it. A payload whose key was erased on purpose (the
// Decoder's error wraps natspub.ErrPayloadErased: a forgotten customer)
// can never be read; it is applied with Message.PayloadErased set and no
// payload, so that the aggregate's position moves on and its later events
// are applied.
//
// # Failures
//
// An error of Apply, of the inbox or of the database rolls the transaction
// back and negatively acknowledges the message with Config.RetryDelay. A
// message without the headers of package natspub (no event ID, no
// sequence) can never be applied: it is terminated and logged.
package natsconsumer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/inbox"
	"github.com/outflow/outflow/outbox/natspub"
)

// The defaults of [Config].
const (
	// BatchDefault is the default of Config.Batch.
	BatchDefault = 16
	// AckWaitDefault is the default of Config.AckWait.
	AckWaitDefault = 30 * time.Second
	// RetryDelayDefault is the default of Config.RetryDelay.
	RetryDelayDefault = time.Second
	// FetchWaitDefault is the default of Config.FetchWait.
	FetchWaitDefault = 5 * time.Second
)

// Message is one delivered event, read from the message natspub published.
type Message struct {
	EventID       uuid.UUID
	EventType     string
	SchemaVersion int
	AggregateType string
	AggregateID   string
	// Sequence is the event's gap-free position in its aggregate, from 1.
	Sequence   int64
	OccurredAt time.Time
	// Replay is set on an operator's replay of an event.
	Replay  bool
	Payload json.RawMessage
	// PayloadErased: the payload was encrypted with a key erased on
	// purpose (natspub.ErrPayloadErased); Payload is nil.
	PayloadErased bool
	// Skipped: the message is the tombstone of an event an operator
	// skipped at the producer (natspub.HeaderSkipped); Payload is nil.
	// Only Config.Skipped sees such a message.
	Skipped bool
	// Subject is the message's subject; StreamSequence its place in the stream.
	Subject        string
	StreamSequence uint64
}

// Positions keep, in the caller's database, the sequence of the last event
// applied per aggregate: usually a column of the row the effect writes
// (the example consumer cmd/orderfeed keeps it in its own table). Both
// run in the message's transaction.
type Positions interface {
	// LastApplied is the sequence of the aggregate's last applied event, 0
	// when none was.
	LastApplied(ctx context.Context, tx pgx.Tx, aggregateType, aggregateID string) (int64, error)
	// SetApplied records seq as the aggregate's last applied event.
	SetApplied(ctx context.Context, tx pgx.Tx, aggregateType, aggregateID string, seq int64) error
}

// ApplyFunc applies one event's effect in tx. It is called once per event
// (the first delivery whose transaction commits), in aggregate order, for
// every event of the subjects consumed: one that ignores an event type
// returns nil, and the position still moves past it.
type ApplyFunc func(ctx context.Context, tx pgx.Tx, m Message) error

// Config configures a [Consumer].
type Config struct {
	// Name is the durable consumer's name on the stream and the inbox's
	// consumer name (the effect's name): stable forever. Mandatory; a
	// valid JetStream consumer name (no '.', '*', '>' or whitespace).
	Name string
	// Stream is the stream consumed. Defaults to natspub.StreamDefault.
	Stream string
	// FilterSubject limits the consumer to matching subjects (e.g.
	// "outflow.order.>"). Defaults to every subject of the stream.
	FilterSubject string
	// Inbox records the event IDs. Mandatory (inbox.New).
	Inbox *inbox.Inbox
	// Positions keep the aggregates' last applied sequences. Mandatory.
	Positions Positions
	// Apply is the effect. Mandatory.
	Apply ApplyFunc
	// Skipped is called instead of Apply, in the message's transaction, for
	// the tombstone of an event an operator skipped at the producer
	// (Message.Skipped): e.g. to record the sequence given up beside the
	// projection. The aggregate's position moves past it either way.
	// Defaults to nil: the skip is logged, and recorded by the inbox row
	// and the position only.
	Skipped ApplyFunc
	// Decoder decodes the bodies natspub's Config.Encoder encoded (the
	// payload codec's encryption). Defaults to nil: such a message is not
	// applied (logged and delivered again after RetryDelay).
	Decoder natspub.PayloadDecoder
	// Batch is the most messages fetched at once, and the consumer's
	// MaxAckPending. Defaults to [BatchDefault] (16).
	Batch int
	// AckWait is how long the stream waits for an ack before it delivers a
	// message again. Defaults to [AckWaitDefault] (30s).
	AckWait time.Duration
	// RetryDelay is how long a message whose apply failed, or which came
	// after a gap, waits before it is delivered again. Defaults to
	// [RetryDelayDefault] (1s).
	RetryDelay time.Duration
	// FetchWait bounds one fetch of an idle stream. Defaults to
	// [FetchWaitDefault] (5s).
	FetchWait time.Duration
	// Failpoints injects faults at jetstream.consumer.after_commit.
	// Defaults to nil: none.
	Failpoints *failpoints.Set
	// Logger receives gaps, failures and terminated messages. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// Consumer is a durable pull consumer applying messages with the inbox.
type Consumer struct {
	cfg  Config
	db   *pgxpool.Pool
	cons jetstream.Consumer
}

// New creates (or updates) the durable consumer cfg.Name on cfg.Stream,
// delivering every message from the stream's start with explicit acks, and
// returns the consumer that applies them to db. Run starts it.
func New(ctx context.Context, js jetstream.JetStream, db *pgxpool.Pool, cfg Config) (*Consumer, error) {
	cfg.Stream = cmp.Or(cfg.Stream, natspub.StreamDefault)
	cfg.Batch = cmp.Or(cfg.Batch, BatchDefault)
	cfg.AckWait = cmp.Or(cfg.AckWait, AckWaitDefault)
	cfg.RetryDelay = cmp.Or(cfg.RetryDelay, RetryDelayDefault)
	cfg.FetchWait = cmp.Or(cfg.FetchWait, FetchWaitDefault)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	switch {
	case cfg.Name == "":
		return nil, errors.New("natsconsumer: Config.Name is empty: name the effect (it is the durable consumer and the inbox's consumer name)")
	case cfg.Inbox == nil:
		return nil, errors.New("natsconsumer: Config.Inbox is nil: pass inbox.New(registerer)")
	case cfg.Positions == nil:
		return nil, errors.New("natsconsumer: Config.Positions is nil: keep each aggregate's last applied sequence in your database")
	case cfg.Apply == nil:
		return nil, errors.New("natsconsumer: Config.Apply is nil")
	case cfg.Batch < 1 || cfg.AckWait <= 0 || cfg.RetryDelay <= 0 || cfg.FetchWait <= 0:
		return nil, fmt.Errorf("natsconsumer: Config.Batch %d, AckWait %s, RetryDelay %s and FetchWait %s must be positive", cfg.Batch, cfg.AckWait, cfg.RetryDelay, cfg.FetchWait)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, cfg.Stream, jetstream.ConsumerConfig{
		Durable:       cfg.Name,
		Description:   "outflow natsconsumer: applied with the inbox, acknowledged after commit",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxAckPending: cfg.Batch,
		FilterSubject: cfg.FilterSubject,
	})
	if err != nil {
		return nil, fmt.Errorf("natsconsumer: create durable consumer %s on stream %s: %w", cfg.Name, cfg.Stream, err)
	}
	return &Consumer{cfg: cfg, db: db, cons: cons}, nil
}

// Run fetches and handles messages one at a time, in the order the stream
// delivers them, until ctx ends; it returns nil then, within FetchWait. A fetch that fails
// (NATS unreachable) is logged and tried again after RetryDelay.
func (c *Consumer) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		batch, err := c.cons.Fetch(c.cfg.Batch, jetstream.FetchMaxWait(c.cfg.FetchWait))
		if err == nil {
			for msg := range batch.Messages() {
				c.handle(ctx, msg)
			}
			err = batch.Error()
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, nats.ErrTimeout) {
			c.cfg.Logger.Warn("natsconsumer: fetch failed; trying again", "consumer", c.cfg.Name, "stream", c.cfg.Stream, "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(c.cfg.RetryDelay):
			}
		}
	}
	return nil
}

// errGap and errBehind are the outcomes of a message out of order.
var (
	errGap    = errors.New("gap in aggregate sequence")
	errBehind = errors.New("sequence at or behind the aggregate's last applied event")
)

// handle applies one message and acknowledges it (see the package
// documentation for each outcome).
func (c *Consumer) handle(ctx context.Context, msg jetstream.Msg) {
	m, err := parse(msg)
	if err != nil {
		c.cfg.Logger.Error("natsconsumer: message without the outbox's headers terminated: it can never be applied",
			"consumer", c.cfg.Name, "subject", msg.Subject(), "error", err)
		if err := msg.Term(); err != nil {
			c.cfg.Logger.Warn("natsconsumer: terminating the message failed; it comes again", "consumer", c.cfg.Name, "subject", msg.Subject(), "error", err)
		}
		return
	}
	// The trace the relay's publish put in the headers (natspub) goes on
	// in the consumer's span, through otel's global propagator and tracer
	// provider (no-ops while tracing is off).
	ctx = otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(msg.Headers()))
	ctx, span := otel.Tracer("github.com/outflow/outflow/outbox/natspub/natsconsumer").Start(ctx, "inbox apply "+m.EventType,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			attribute.String("outflow.consumer", c.cfg.Name), attribute.String("outflow.event.id", m.EventID.String()),
			attribute.String("outflow.aggregate.type", m.AggregateType), attribute.String("outflow.aggregate.id", m.AggregateID),
			attribute.Int64("outflow.event.sequence", m.Sequence), attribute.Bool("outflow.publish.replay", m.Replay)))
	defer span.End()
	log := c.cfg.Logger.With("consumer", c.cfg.Name, "event_id", m.EventID, "event_type", m.EventType,
		"aggregate_type", m.AggregateType, "aggregate_id", m.AggregateID, "sequence", m.Sequence)
	if m.Skipped {
		m.Payload = nil // a tombstone has no body
	} else {
		m.Payload, err = c.decode(msg)
	}
	if errors.Is(err, natspub.ErrPayloadErased) {
		log.Info("natsconsumer: the payload's key was erased; the event is applied without its payload", "error", err)
		m.PayloadErased, err = true, nil
	}
	if err != nil {
		log.Error("natsconsumer: payload not decoded; delivered again later", "error", err, "retry_in", c.cfg.RetryDelay)
		_ = msg.NakWithDelay(c.cfg.RetryDelay)
		return
	}
	var first bool
	var last int64
	err = pgx.BeginFunc(ctx, c.db, func(tx pgx.Tx) error {
		var err error
		if first, err = c.cfg.Inbox.Record(ctx, tx, c.cfg.Name, m.EventID); err != nil || !first {
			return err
		}
		if last, err = c.cfg.Positions.LastApplied(ctx, tx, m.AggregateType, m.AggregateID); err != nil {
			return fmt.Errorf("read the aggregate's position: %w", err)
		}
		switch {
		case m.Sequence > last+1:
			return errGap
		case m.Sequence <= last:
			return errBehind
		}
		apply := c.cfg.Apply
		if m.Skipped {
			apply = c.cfg.Skipped
		}
		if apply != nil {
			if err := apply(ctx, tx, m); err != nil {
				return err
			}
		}
		return c.cfg.Positions.SetApplied(ctx, tx, m.AggregateType, m.AggregateID, m.Sequence)
	})
	switch {
	case errors.Is(err, errGap):
		log.Warn("natsconsumer: gap in aggregate sequence: the message is not applied before its predecessors; delivered again later",
			"last_applied", last, "missing_from", last+1, "retry_in", c.cfg.RetryDelay)
		_ = msg.NakWithDelay(c.cfg.RetryDelay)
		return
	case errors.Is(err, errBehind):
		log.Error("natsconsumer: a new event at or behind the aggregate's last applied sequence: another event took its place; terminated, not applied",
			"last_applied", last)
		_ = msg.Term()
		return
	case err != nil:
		log.Warn("natsconsumer: apply failed; delivered again later", "error", err, "retry_in", c.cfg.RetryDelay)
		_ = msg.NakWithDelay(c.cfg.RetryDelay)
		return
	}
	if first && m.Skipped {
		log.Warn("natsconsumer: the event was skipped at the producer by an operator: its sequence is passed, nothing applied")
	}
	if err := c.cfg.Failpoints.Inject(ctx, failpoints.JetStreamConsumerAfterCommit); err != nil {
		log.Warn("natsconsumer: acknowledgement dropped", "error", err)
		return
	}
	if err := msg.Ack(); err != nil {
		log.Warn("natsconsumer: ack failed; the message comes again and the inbox absorbs it", "error", err)
	}
	if !first {
		log.Debug("natsconsumer: duplicate delivery acknowledged without effect")
	}
}

// decode returns msg's JSON payload: its body, or what Config.Decoder makes
// of a body natspub's Encoder encoded.
func (c *Consumer) decode(msg jetstream.Msg) ([]byte, error) {
	h := msg.Headers()
	encoding := h.Get(natspub.HeaderPayloadEncoding)
	if encoding == "" {
		return msg.Data(), nil
	}
	if c.cfg.Decoder == nil {
		return nil, fmt.Errorf("the body is encoded (%s %s, key %s) and Config.Decoder is nil: give the consumer the publisher's payload codec",
			natspub.HeaderPayloadEncoding, encoding, h.Get(natspub.HeaderPayloadKeyID))
	}
	return c.cfg.Decoder.DecodePayload(natspub.EncodedPayload{Data: msg.Data(), Encoding: encoding, KeyID: h.Get(natspub.HeaderPayloadKeyID)})
}

// parse reads the event out of a message natspub published.
func parse(msg jetstream.Msg) (Message, error) {
	h := msg.Headers()
	id, err := uuid.Parse(h.Get(nats.MsgIdHdr))
	if err != nil {
		return Message{}, fmt.Errorf("%s %q is not an event ID: %w", nats.MsgIdHdr, h.Get(nats.MsgIdHdr), err)
	}
	seq, err := strconv.ParseInt(h.Get(natspub.HeaderSequence), 10, 64)
	if err != nil || seq < 1 {
		return Message{}, fmt.Errorf("%s %q is not a sequence", natspub.HeaderSequence, h.Get(natspub.HeaderSequence))
	}
	version, err := strconv.Atoi(h.Get(natspub.HeaderSchemaVersion))
	if err != nil {
		return Message{}, fmt.Errorf("%s %q is not a schema version", natspub.HeaderSchemaVersion, h.Get(natspub.HeaderSchemaVersion))
	}
	m := Message{
		EventID:       id,
		EventType:     h.Get(natspub.HeaderEventType),
		SchemaVersion: version,
		AggregateType: h.Get(natspub.HeaderAggregateType),
		AggregateID:   h.Get(natspub.HeaderAggregateID),
		Sequence:      seq,
		Replay:        h.Get(natspub.HeaderReplay) == "true",
		Skipped:       h.Get(natspub.HeaderSkipped) == "true",
		Payload:       msg.Data(),
		Subject:       msg.Subject(),
	}
	if m.AggregateType == "" || m.AggregateID == "" || m.EventType == "" {
		return Message{}, fmt.Errorf("%s, %s or %s missing", natspub.HeaderAggregateType, natspub.HeaderAggregateID, natspub.HeaderEventType)
	}
	if at := h.Get(natspub.HeaderOccurredAt); at != "" {
		if m.OccurredAt, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return Message{}, fmt.Errorf("%s %q: %w", natspub.HeaderOccurredAt, at, err)
		}
	}
	if meta, err := msg.Metadata(); err == nil {
		m.StreamSequence = meta.Sequence.Stream
	}
	return m, nil
}
