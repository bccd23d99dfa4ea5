// Package natspub is the outbox relay's NATS JetStream publisher: it
// publishes each outbox event as one message to a JetStream stream and
// returns only after the stream's PubAck, so the relay marks an event
// published only once the stream has stored it.
//
// # The message
//
// The subject is <prefix>.<aggregate_type>.<aggregate_id> (prefix
// [SubjectPrefixDefault] unless Config.SubjectPrefix says otherwise): one
// subject per aggregate, so a consumer reads one aggregate's events in
// stream order. Both parts must be valid subject tokens (not empty, none of
// '.', '*', '>' or whitespace); an event whose aggregate type or ID is not
// one is refused as its own permanent fault ([outbox.ErrPermanent]: the
// relay quarantines it) rather than escaped, so that a subject always reads
// as the aggregate it names. The body is the event's JSON payload as
// enqueued. The headers are:
//
//	Nats-Msg-Id                  the event's ID: the stream's deduplication key
//	Outflow-Event-Type           e.g. OrderCreated
//	Outflow-Schema-Version       the payload's schema version, e.g. 1
//	Outflow-Aggregate-Type       e.g. order
//	Outflow-Aggregate-Id         the aggregate's ID
//	Outflow-Aggregate-Sequence   the event's gap-free position in its aggregate, from 1
//	Outflow-Occurred-At          the enqueuing transaction's clock, RFC 3339 with nanoseconds
//	Outflow-Replay               "true" on an operator's replay (outboxops.Replay)
//	Outflow-Skipped              "true" on an operator's skip (a tombstone: no body)
//	Outflow-Payload-Encoding     set only when Config.Encoder encoded the body, e.g. binary/encrypted
//	Outflow-Payload-Key-Id       the key the Encoder used, e.g. customer/<uuid>
//
// # An operator's skip
//
// An event an operator skipped (outboxctl skip: quarantined, e.g. larger
// than the stream's max_msg_size) is published by the relay as a tombstone
// ([Publisher.PublishSkip]), in its place in the aggregate's lane: the same
// subject and headers, Nats-Msg-Id the event's ID, Outflow-Skipped: true,
// and no body. A consumer that applies each aggregate's events in sequence
// (natspub/natsconsumer) takes it as the sequence given up and goes on with
// the next, instead of waiting for it for ever. An event the stream did
// store before it was skipped (both sinks, Temporal refused it) keeps that
// message: within the duplicate window the stream drops the tombstone as a
// duplicate of it, later the consumer's inbox does. An aggregate that has
// no subject has nothing on the stream, and its tombstone is acknowledged
// unpublished.
//
// With Config.Encoder (the starter's, when OUTFLOW_CODEC_KEYS is set: the
// payload codec of Temporal's histories), the body is the Encoder's output
// instead of the payload, so that personal data reaches the stream
// encrypted; a consumer decodes it with the matching [PayloadDecoder].
//
// Package natspub/natsconsumer reads them back.
//
// # The duplicate window
//
// The relay publishes at least once: an event whose PubAck arrived but
// whose mark was lost (a crash, jetstream.after_ack) is published again by
// the relay that takes its lease over, and a publish whose PubAck was lost
// (a timeout, a cut connection) is published again once the sink answers.
// JetStream drops the second message when it carries a Nats-Msg-Id it
// stored within the stream's duplicate window (StreamConfig.Duplicates, 2
// minutes unless the stream says otherwise), and answers with a PubAck whose
// Duplicate is true, which is an acknowledgement too. A running relay
// republishes within [RequiredWindow] of the first publish: the lease it
// waits out before taking a claim over, the publish timeout, and the
// longest pause between probes of a sink that did not answer. [New]
// refuses a stream whose window is shorter than the Config.MinWindow it is
// given (the starter passes RequiredWindow of its relay's settings).
//
// What comes later than the window is published again and is stored
// twice: a redelivery after every relay was down for longer than it, or
// after the NATS server was unreachable for longer than it, and every
// operator's replay of an event older than it. The stream's window is a
// first filter; the consumers' inbox (package inbox, in the consumer's own
// transaction) is what makes each effect happen once.
//
// # Whose fault
//
// A publish that fails because JetStream did not answer (no responders for
// the subject, a timeout, a closed, draining or reconnecting connection, a
// 503 from the server) is the sink's fault ([outbox.SinkUnavailable]): the
// relay counts no attempt and probes with [Publisher.Probe]. A message the
// stream refuses for what it is (larger than the stream's or the server's
// maximum) is the event's permanent fault. A subject the server binds to
// another stream than Config.Stream (each publish names its expected
// stream) is a configuration mistake and the sink's fault too. Any other refusal by the stream
// is the event's fault and counts an attempt.
package natspub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/failpoints"
)

// The defaults of [Config], and of the starter's OUTFLOW_NATS_* variables.
const (
	// URLDefault is the default of OUTFLOW_NATS_URL.
	URLDefault = nats.DefaultURL
	// StreamDefault is the default of Config.Stream (OUTFLOW_NATS_STREAM).
	StreamDefault = "OUTFLOW"
	// SubjectPrefixDefault is the default of Config.SubjectPrefix
	// (OUTFLOW_NATS_SUBJECT_PREFIX).
	SubjectPrefixDefault = "outflow"
	// ServerWindowDefault is the duplicate window NATS gives a stream whose
	// configuration sets none; [New] gives a stream it creates at least
	// this.
	ServerWindowDefault = 2 * time.Minute
)

// The message headers besides nats.MsgIdHdr (the event's ID); see the
// package documentation.
const (
	HeaderEventType     = "Outflow-Event-Type"
	HeaderSchemaVersion = "Outflow-Schema-Version"
	HeaderAggregateType = "Outflow-Aggregate-Type"
	HeaderAggregateID   = "Outflow-Aggregate-Id"
	HeaderSequence      = "Outflow-Aggregate-Sequence"
	HeaderOccurredAt    = "Outflow-Occurred-At"
	HeaderReplay        = "Outflow-Replay"
	// HeaderSkipped is "true" on the tombstone of an event an operator
	// skipped ([Publisher.PublishSkip]).
	HeaderSkipped = "Outflow-Skipped"
	// HeaderPayloadEncoding is [EncodedPayload.Encoding]; absent, the body
	// is the payload as enqueued (JSON).
	HeaderPayloadEncoding = "Outflow-Payload-Encoding"
	// HeaderPayloadKeyID is [EncodedPayload.KeyID].
	HeaderPayloadKeyID = "Outflow-Payload-Key-Id"
)

// EncodedPayload is an event's payload as a [PayloadEncoder] turned it into
// a message body: Data is the body, Encoding and KeyID go into the headers
// [HeaderPayloadEncoding] and [HeaderPayloadKeyID].
type EncodedPayload struct {
	Data     []byte
	Encoding string
	KeyID    string
}

// PayloadEncoder encodes an event's JSON payload into a message body, e.g.
// encrypts it. An error is the event's fault for the relay (the attempt
// counts), unless it wraps [outbox.ErrPermanent] or is
// [outbox.SinkUnavailable].
type PayloadEncoder interface {
	EncodePayload(payload []byte) (EncodedPayload, error)
}

// PayloadDecoder is the consumer's side of a [PayloadEncoder]: it returns
// the event's JSON payload, or an error wrapping [ErrPayloadErased] when the
// payload can never be decoded by anyone (its key was erased on purpose).
type PayloadDecoder interface {
	DecodePayload(p EncodedPayload) ([]byte, error)
}

// ErrPayloadErased is a [PayloadDecoder]'s answer for a payload whose key
// was erased on purpose (a forgotten customer): the event happened, but
// its payload is gone for good.
var ErrPayloadErased = errors.New("natspub: the payload's key was erased")

// DuplicatesMetric counts the publishes the stream answered as duplicates.
const DuplicatesMetric = "outbox_jetstream_duplicate_publishes_total"

// Config configures a [Publisher].
type Config struct {
	// Stream is the JetStream stream the subjects are bound to
	// (OUTFLOW_NATS_STREAM). Defaults to [StreamDefault] ("OUTFLOW").
	Stream string
	// SubjectPrefix is the first token of every subject
	// (OUTFLOW_NATS_SUBJECT_PREFIX); it may hold dots but no wildcard.
	// Defaults to [SubjectPrefixDefault] ("outflow").
	SubjectPrefix string
	// MinWindow is the shortest duplicate window the relay needs of the
	// stream: New refuses a stream whose window is shorter. Pass
	// [RequiredWindow] of the relay's RelayConfig. Defaults to
	// RequiredWindow of the zero RelayConfig (the relay's defaults: 70s).
	MinWindow time.Duration
	// CreateStream creates the stream when it does not exist, with the
	// subjects <SubjectPrefix>.> on file storage and a duplicate window of
	// the larger of MinWindow and [ServerWindowDefault]. Defaults to false:
	// a missing stream stops New with an error that names it.
	CreateStream bool
	// Encoder encodes each payload into the message body (the payload
	// codec of OUTFLOW_CODEC_KEYS, so that personal data reaches the stream
	// encrypted). Defaults to nil: the body is the payload as enqueued.
	Encoder PayloadEncoder
	// Failpoints injects faults at jetstream.after_ack (the PubAck
	// received, the event not yet marked). Defaults to nil: none.
	Failpoints *failpoints.Set
	// Logger records each duplicate the stream absorbed. Defaults to no
	// logging.
	Logger *slog.Logger
	// Registerer receives [DuplicatesMetric]. Defaults to none. Publishers
	// sharing a Registerer share the counter.
	Registerer prometheus.Registerer
}

// RequiredWindow is the duplicate window a relay with cfg needs of the
// stream so that its own redeliveries are deduplicated there: the lease
// (a lost mark is published again by the relay that takes the claim over,
// at most one lease after the claim), plus the publish timeout (the first
// publish may have been stored at its very end), plus the longest pause
// between probes of a sink that did not answer (a lost PubAck is published
// again once a probe succeeds). Fields left zero count with the relay's
// defaults, as [outbox.NewRelay] applies them. With the defaults: 30s + 10s
// + 30s = 70s, within NATS's default window of 2 minutes.
func RequiredWindow(cfg outbox.RelayConfig) time.Duration {
	lease := cmp.Or(cfg.Lease, outbox.LeaseDefault)
	publish := cmp.Or(cfg.PublishTimeout, min(outbox.PublishTimeoutDefault, lease/2))
	probeMax := cmp.Or(cfg.ProbeMax, max(outbox.ProbeMaxDefault, cfg.ProbeBase))
	return lease + publish + probeMax
}

// Publisher implements [outbox.Publisher] and [outbox.Prober] over a
// JetStream stream. It is safe for concurrent use.
type Publisher struct {
	js     jetstream.JetStream
	stream string
	prefix string
	window time.Duration
	enc    PayloadEncoder
	fps    *failpoints.Set
	logger *slog.Logger
	dups   prometheus.Counter
}

var (
	_ outbox.SkipPublisher = (*Publisher)(nil)
	_ outbox.Prober        = (*Publisher)(nil)
)

// New returns a publisher to cfg.Stream through js, after checking that the
// stream exists (creating it when cfg.CreateStream says so) and that its
// duplicate window is at least cfg.MinWindow.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Publisher, error) {
	cfg.Stream = cmp.Or(cfg.Stream, StreamDefault)
	cfg.SubjectPrefix = cmp.Or(cfg.SubjectPrefix, SubjectPrefixDefault)
	cfg.MinWindow = cmp.Or(cfg.MinWindow, RequiredWindow(outbox.RelayConfig{}))
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := checkPrefix(cfg.SubjectPrefix); err != nil {
		return nil, err
	}
	if cfg.MinWindow < 0 {
		return nil, fmt.Errorf("natspub: Config.MinWindow %s must not be negative", cfg.MinWindow)
	}
	window, err := streamWindow(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	if window < cfg.MinWindow {
		return nil, fmt.Errorf("natspub: stream %s keeps message IDs for %s (its duplicate window), shorter than the %s the relay needs "+
			"(lease + publish timeout + longest probe pause): a redelivery after a lost mark could be stored twice; "+
			"raise the stream's window (nats stream edit %s --dupe-window %s) or shorten the relay's lease",
			cfg.Stream, window, cfg.MinWindow, cfg.Stream, cfg.MinWindow)
	}
	dups := prometheus.NewCounter(prometheus.CounterOpts{
		Name: DuplicatesMetric,
		Help: "Publishes JetStream answered as duplicates of a message ID it stored within the stream's duplicate window: re-deliveries absorbed by the stream.",
	})
	if cfg.Registerer != nil {
		if dups, err = register(cfg.Registerer, dups); err != nil {
			return nil, err
		}
	}
	return &Publisher{js: js, stream: cfg.Stream, prefix: cfg.SubjectPrefix, window: window, enc: cfg.Encoder,
		fps: cfg.Failpoints, logger: cfg.Logger, dups: dups}, nil
}

// streamWindow reads the stream's duplicate window, creating the stream
// first when it is missing and cfg says so.
func streamWindow(ctx context.Context, js jetstream.JetStream, cfg Config) (time.Duration, error) {
	s, err := js.Stream(ctx, cfg.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) && cfg.CreateStream {
		s, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:       cfg.Stream,
			Subjects:   []string{cfg.SubjectPrefix + ".>"},
			Storage:    jetstream.FileStorage,
			Duplicates: max(cfg.MinWindow, ServerWindowDefault),
		})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // another relay created it meanwhile
			s, err = js.Stream(ctx, cfg.Stream)
		}
	}
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return 0, fmt.Errorf("natspub: stream %s does not exist: create it with the subjects %s.> and a duplicate window of at least %s, or set Config.CreateStream",
			cfg.Stream, cfg.SubjectPrefix, cfg.MinWindow)
	case err != nil:
		return 0, fmt.Errorf("natspub: read stream %s: %w", cfg.Stream, err)
	}
	return s.CachedInfo().Config.Duplicates, nil
}

func checkPrefix(prefix string) error {
	for _, tok := range strings.Split(prefix, ".") {
		if err := checkToken(tok); err != nil {
			return fmt.Errorf("natspub: Config.SubjectPrefix %q: %w", prefix, err)
		}
	}
	return nil
}

// checkToken refuses what cannot be one token of a subject.
func checkToken(tok string) error {
	if tok == "" {
		return errors.New("an empty subject token")
	}
	if i := strings.IndexFunc(tok, func(r rune) bool { return r == '.' || r == '*' || r == '>' || unicode.IsSpace(r) }); i >= 0 {
		return fmt.Errorf("%q holds %q, which a subject token cannot", tok, tok[i:i+1])
	}
	return nil
}

func register(reg prometheus.Registerer, c prometheus.Counter) (prometheus.Counter, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(prometheus.Counter); ok {
			return existing, nil
		}
	}
	return nil, fmt.Errorf("natspub: register %s: %w", DuplicatesMetric, err)
}

// Window is the stream's duplicate window as New read it.
func (p *Publisher) Window() time.Duration { return p.window }

// Stream is the stream the publisher publishes to.
func (p *Publisher) Stream() string { return p.stream }

// Subject is the subject of e's message, or an error when e's aggregate
// type or ID is not a subject token.
func (p *Publisher) Subject(e outbox.Event) (string, error) {
	return Subject(p.prefix, e.AggregateType, e.AggregateID)
}

// Subject is the subject <prefix>.<aggregateType>.<aggregateID>, or an
// error when either part is not a subject token.
func Subject(prefix, aggregateType, aggregateID string) (string, error) {
	if err := checkToken(aggregateType); err != nil {
		return "", fmt.Errorf("aggregate type: %w", err)
	}
	if err := checkToken(aggregateID); err != nil {
		return "", fmt.Errorf("aggregate ID: %w", err)
	}
	return prefix + "." + aggregateType + "." + aggregateID, nil
}

// Message is the message e is published as: an error wrapping
// [errSubject] when e has no subject, else the Encoder's.
func (p *Publisher) Message(e outbox.Event) (*nats.Msg, error) {
	subject, err := p.Subject(e)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSubject, err)
	}
	m := nats.NewMsg(subject)
	m.Data = e.Payload
	if p.enc != nil {
		enc, err := p.enc.EncodePayload(e.Payload)
		if err != nil {
			return nil, fmt.Errorf("natspub: encode the payload of event %s (%s): %w", e.ID, e.Type, err)
		}
		m.Data = enc.Data
		if enc.Encoding != "" {
			m.Header.Set(HeaderPayloadEncoding, enc.Encoding)
		}
		if enc.KeyID != "" {
			m.Header.Set(HeaderPayloadKeyID, enc.KeyID)
		}
	}
	setHeaders(m, e)
	return m, nil
}

// setHeaders sets the headers that describe e (all but the payload's).
func setHeaders(m *nats.Msg, e outbox.Event) {
	m.Header.Set(nats.MsgIdHdr, e.ID.String())
	m.Header.Set(HeaderEventType, e.Type)
	m.Header.Set(HeaderSchemaVersion, strconv.Itoa(e.SchemaVersion))
	m.Header.Set(HeaderAggregateType, e.AggregateType)
	m.Header.Set(HeaderAggregateID, e.AggregateID)
	m.Header.Set(HeaderSequence, strconv.FormatInt(e.Sequence, 10))
	m.Header.Set(HeaderOccurredAt, e.OccurredAt.UTC().Format(time.RFC3339Nano))
	if e.Replay {
		m.Header.Set(HeaderReplay, "true")
	}
}

// Tombstone is the message the skipped event e is published as: e's
// subject and headers with Outflow-Skipped: true, and no body. The error
// wraps [errSubject] when e has no subject.
func (p *Publisher) Tombstone(e outbox.Event) (*nats.Msg, error) {
	subject, err := p.Subject(e)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSubject, err)
	}
	m := nats.NewMsg(subject)
	setHeaders(m, e)
	m.Header.Set(HeaderSkipped, "true")
	return m, nil
}

// Publish publishes e and returns nil once the stream's PubAck says it
// stored the message, or that it already had one with e's ID (a duplicate
// within the window). It then runs the jetstream.after_ack failpoint.
func (p *Publisher) Publish(ctx context.Context, e outbox.Event) error {
	m, err := p.Message(e)
	if err != nil && !errors.Is(err, errSubject) {
		return err
	}
	if err != nil {
		return outbox.Permanent(fmt.Errorf("natspub: event %s (%s) cannot be published: its subject would not be %s.<aggregate_type>.<aggregate_id>: %w; "+
			"skip it (outboxctl skip) or publish its aggregate otherwise", e.ID, e.Type, p.prefix, err))
	}
	return p.publish(ctx, e, m, "event")
}

// PublishSkip publishes the tombstone of e, an event an operator skipped
// ([Publisher.Tombstone]), and returns nil once the stream's PubAck says it
// stored it, or already had a message with e's ID: then the event itself
// reached the stream before it was skipped, and that message stands. It
// acknowledges without publishing the tombstone of an event whose
// aggregate has no subject: none of its events is on the stream.
func (p *Publisher) PublishSkip(ctx context.Context, e outbox.Event) error {
	m, err := p.Tombstone(e)
	if err != nil {
		p.logger.Warn("skipped event's aggregate has no subject: nothing of it is on the stream, no tombstone published",
			"event_id", e.ID, "event_type", e.Type, "error", err)
		return nil
	}
	return p.publish(ctx, e, m, "tombstone of event")
}

// publish publishes m, the message of e (what: "event", or "tombstone of
// event"), and
// returns nil on a PubAck, duplicate or not; it then runs the
// jetstream.after_ack failpoint. The trace context of ctx (the relay's
// publish span) goes in m's headers (traceparent, tracestate, baggage)
// through otel's global propagator, so the consumer (natspub/natsconsumer)
// continues the trace; nothing is added while tracing is off.
func (p *Publisher) publish(ctx context.Context, e outbox.Event, m *nats.Msg, what string) error {
	if trace.SpanContextFromContext(ctx).IsValid() {
		otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(m.Header))
	}
	ack, err := p.js.PublishMsg(ctx, m, jetstream.WithExpectStream(p.stream))
	if err != nil {
		return whoseFault(fmt.Errorf("natspub: publish %s %s (%s) to %s on stream %s: %w", what, e.ID, e.Type, m.Subject, p.stream, err))
	}
	if ack.Duplicate {
		p.dups.Inc()
		p.logger.Info("stream already had the event: duplicate publish absorbed", "event_id", e.ID, "subject", m.Subject,
			"stream", ack.Stream, "stream_sequence", ack.Sequence, "replay", e.Replay, "skipped", e.Skipped)
	}
	if err := p.fps.Inject(ctx, failpoints.JetStreamAfterAck); err != nil {
		return fmt.Errorf("natspub: acknowledgement of event %s dropped: %w", e.ID, err)
	}
	return nil
}

// errSubject marks an event whose aggregate makes no subject.
var errSubject = errors.New("no subject")

// errCodeStreamNotMatch is the server's answer to a publish whose subject
// is bound to a stream other than the expected one (JSStreamNotMatchErr);
// nats.go has no constant for it.
const errCodeStreamNotMatch jetstream.ErrorCode = 10060

// whoseFault classifies a failed publish for the relay (see the package
// documentation).
func whoseFault(err error) error {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, nats.ErrMaxPayload), errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum):
		return outbox.Permanent(fmt.Errorf("%w: the stream takes no message this large; raise its max_msg_size (or the server's max_payload) "+
			"and retry the event, or skip it (outboxctl skip): its consumers then get a tombstone in its place", err))
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionDraining),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrNoServers), errors.Is(err, nats.ErrStaleConnection),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return outbox.SinkUnavailable(err)
	case errors.As(err, &apiErr) && (apiErr.Code >= 500 || apiErr.ErrorCode == errCodeStreamNotMatch):
		// A 5xx is the server's trouble; a subject bound to another stream
		// is a configuration mistake that refuses every event alike.
		return outbox.SinkUnavailable(err)
	}
	return err
}

// Probe reads the stream's information, the cheapest call that tells
// whether JetStream answers for the stream: while the relay's breaker is
// open it probes with this ([outbox.Prober]) instead of publishing.
func (p *Publisher) Probe(ctx context.Context) error {
	_, err := p.js.Stream(ctx, p.stream)
	return err
}
