package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/propagation"
)

// ErrLogNoRange is wrapped by an enqueue to the log that found no range
// partition of outbox_log for its position: the log's retention pass
// (outboxops.RetainLog) makes the ranges ahead of the sequence, and none ran for
// long enough. The starter runs it every OUTFLOW_CLEANUP_INTERVAL (a
// service of its own runs outboxops.Schedule with Log set); `outboxctl
// cleanup` runs one pass now. Nothing was written: the caller's
// transaction fails and may be retried once a range exists.
var errLogNoRange = errors.New("outbox: the log has no range partition for the next position; " +
	"its retention pass makes them ahead of the sequence (the starter's cleanup schedule, outboxops.Schedule with Log set, or `outboxctl cleanup` now)")

// explainLogNoRange wraps PostgreSQL's "no partition of relation
// "outbox_log" found for row" in [ErrLogNoRange] once (the lane's error
// comes back through the batch's Close already explained); any other error
// is returned as it is.
func explainLogNoRange(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23514" && strings.Contains(pgErr.Message, `no partition of relation "outbox_log"`) &&
		!errors.Is(err, errLogNoRange) {
		return fmt.Errorf("%w: %w", errLogNoRange, err)
	}
	return err
}

// EnqueueConfig configures an [Enqueuer]. The zero value writes what
// [Enqueue] writes, where the database's relay source says.
type EnqueueConfig struct {
	// Log writes events to the append-only log (outbox_log) whatever the
	// database's relay source says. Producers leave it unset: [Enqueue]
	// writes where the database records the source (table outbox_source,
	// changed with `outboxctl source set`), and every relay follows that
	// record. Log is what a producer that read the log source before a
	// switch back does, for tests and benchmarks that need such a write; an
	// event written there while the source is poll or cdc is still
	// published, in its order's sequence, by the relays' sweeper of the
	// log. It goes when the relay's sources move behind one seam.
	Log bool
	// MaxPayloadBytes is the largest payload (Event.Payload, in bytes, as
	// given) the enqueuer writes; an event with a larger one is refused
	// with [ErrPayloadTooLarge] and nothing of the call is written.
	// Optional: defaulted to [MaxPayloadBytesDefault] (64 MiB), the most
	// that any sink outflow ships could ever take. Set it to what your
	// sink takes to refuse at the source what the relay would otherwise
	// quarantine (see MaxPayloadBytesDefault). Negative is a mistake:
	// every enqueue fails, saying so.
	MaxPayloadBytes int
	// Propagator writes the caller's trace context into Event.TraceContext
	// (see [CaptureTraceContext]). Optional: otel's global propagator.
	Propagator propagation.TextMapPropagator
}

// Enqueuer writes events inside the caller's transaction, like [Enqueue],
// with its [EnqueueConfig]'s payload limit. Its zero value is Enqueue.
type Enqueuer struct {
	cfg EnqueueConfig
}

// NewEnqueuer returns an Enqueuer that writes as cfg says.
func NewEnqueuer(cfg EnqueueConfig) *Enqueuer { return &Enqueuer{cfg: cfg} }

// Config returns the enqueuer's configuration.
func (q *Enqueuer) Config() EnqueueConfig { return q.cfg }

// Enqueue is [Enqueue] with the enqueuer's configuration.
func (q *Enqueuer) Enqueue(ctx context.Context, tx pgx.Tx, events ...Event) ([]Event, error) {
	limit, err := q.maxPayload()
	if err != nil {
		return nil, err
	}
	return enqueueTo(ctx, tx, q.propagator(), q.stmt(), limit, events)
}

// EnqueueBatch is [EnqueueBatch] with the enqueuer's configuration.
func (q *Enqueuer) EnqueueBatch(b *pgx.Batch, events ...Event) (*Queued, error) {
	limit, err := q.maxPayload()
	if err != nil {
		return nil, err
	}
	return enqueueBatchTo(b, q.stmt(), limit, events)
}

// maxPayload is the enqueuer's payload limit: MaxPayloadBytes, defaulted.
func (q *Enqueuer) maxPayload() (int, error) {
	switch {
	case q == nil || q.cfg.MaxPayloadBytes == 0:
		return MaxPayloadBytesDefault, nil
	case q.cfg.MaxPayloadBytes < 0:
		return 0, fmt.Errorf("outbox: EnqueueConfig.MaxPayloadBytes %d is negative; use 0 for the default (%d bytes) or the largest payload your sink takes",
			q.cfg.MaxPayloadBytes, MaxPayloadBytesDefault)
	}
	return q.cfg.MaxPayloadBytes, nil
}

func (q *Enqueuer) propagator() propagation.TextMapPropagator {
	if q == nil {
		return nil
	}
	return q.cfg.Propagator
}

func (q *Enqueuer) stmt() enqueueStmt {
	if q != nil && q.cfg.Log {
		return qEnqueueLogAggregate
	}
	return qEnqueueAggregate
}
