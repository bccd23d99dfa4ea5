package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrLogNoRange is wrapped by an enqueue to the log that found no range
// partition of outbox_log for its position: the log's retention pass
// ([RetainLog]) makes the ranges ahead of the sequence, and none ran for
// long enough. The starter runs it every OUTFLOW_CLEANUP_INTERVAL (a
// service of its own runs outboxops.Schedule with Log set); `outboxctl
// cleanup` runs one pass now. Nothing was written: the caller's
// transaction fails and may be retried once a range exists.
var ErrLogNoRange = errors.New("outbox: the log has no range partition for the next position; " +
	"its retention pass makes them ahead of the sequence (the starter's cleanup schedule, outboxops.Schedule with Log set, or `outboxctl cleanup` now)")

// explainLogNoRange wraps PostgreSQL's "no partition of relation
// "outbox_log" found for row" in [ErrLogNoRange] once (the lane's error
// comes back through the batch's Close already explained); any other error
// is returned as it is.
func explainLogNoRange(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23514" && strings.Contains(pgErr.Message, `no partition of relation "outbox_log"`) &&
		!errors.Is(err, ErrLogNoRange) {
		return fmt.Errorf("%w: %w", ErrLogNoRange, err)
	}
	return err
}

// EnqueueConfig chooses where an [Enqueuer] writes. The zero value writes
// what [Enqueue] writes.
type EnqueueConfig struct {
	// Log writes events to the append-only log (outbox_log) that the log
	// relay source ([LogRelay], OUTFLOW_RELAY_SOURCE=log) reads, instead of
	// outbox_events, which the poll and cdc sources read. Defaults to false.
	//
	// Instead of, not in addition to: the log source exists to write
	// nothing per event beyond the event itself (issue 27), and an event
	// written to both would be published by both sources. So every
	// producer of a database and its relays must agree on one source; the
	// producers' switch is theirs (this field), and switching a database
	// that has unpublished events in outbox_events needs those drained by
	// a poll relay first, or an order's earlier event there could be
	// published after its later one in the log: [LogSwitch] does that
	// before its log reader starts.
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
}

// Enqueuer writes events inside the caller's transaction, like [Enqueue],
// to the table its [EnqueueConfig] chooses. Its zero value is Enqueue.
type Enqueuer struct {
	cfg EnqueueConfig
}

// NewEnqueuer returns an Enqueuer that writes as cfg says.
func NewEnqueuer(cfg EnqueueConfig) *Enqueuer { return &Enqueuer{cfg: cfg} }

// Config returns the enqueuer's configuration.
func (q *Enqueuer) Config() EnqueueConfig { return q.cfg }

// Enqueue is [Enqueue] to the enqueuer's table. For the log, each
// aggregate's events also get the lane gate (see [LogRelay]) and a
// position, and the order's outbox_sequences row is the lane lock as
// before.
func (q *Enqueuer) Enqueue(ctx context.Context, tx pgx.Tx, events ...Event) ([]Event, error) {
	limit, err := q.maxPayload()
	if err != nil {
		return nil, err
	}
	return enqueueTo(ctx, tx, q.stmt(), limit, events)
}

// EnqueueBatch is [EnqueueBatch] to the enqueuer's table.
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

func (q *Enqueuer) stmt() enqueueStmt {
	if q != nil && q.cfg.Log {
		return qEnqueueLogAggregate
	}
	return qEnqueueAggregate
}
