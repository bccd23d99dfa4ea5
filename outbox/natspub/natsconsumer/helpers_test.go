package natsconsumer_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/natspub"
	"github.com/outflow/outflow/outbox/natspub/dev/natstest"
	"github.com/outflow/outflow/outbox/natspub/natsconsumer"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testlog"
)

// connect dials the server; the connection closes when the test ends.
func connect(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, js := natstest.Connect(t, "natsconsumer-test")
	return js
}

// testStream creates a stream and subject prefix no other test uses, with
// the given duplicate window, deleted when the test ends.
func testStream(t *testing.T, js jetstream.JetStream, window time.Duration) (stream, prefix string) {
	t.Helper()
	stream, prefix = natstest.Names(t, "consumer")
	_, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: stream, Subjects: []string{prefix + ".>"}, Storage: jetstream.MemoryStorage, Duplicates: window,
	})
	require.NoError(t, err)
	return stream, prefix
}

// publisher publishes events as the relay would.
func publisher(t *testing.T, js jetstream.JetStream, stream, prefix string) *natspub.Publisher {
	t.Helper()
	pub, err := natspub.New(context.Background(), js, natspub.Config{Stream: stream, SubjectPrefix: prefix, MinWindow: time.Millisecond})
	require.NoError(t, err)
	return pub
}

// orderEvent is an event of order aggregateID at seq, as Enqueue would
// have numbered it.
func orderEvent(aggregateID string, seq int64, eventType string) outbox.Event {
	return outbox.Event{ID: uuid.New(), AggregateType: "order", AggregateID: aggregateID, Sequence: seq, Type: eventType,
		SchemaVersion: 1, Payload: []byte(`{"order_id":"` + aggregateID + `","seq":` + strconv.FormatInt(seq, 10) + `}`), OccurredAt: time.Now()}
}

// projection is the tests' consumer effect: a row per applied event, in
// the order they were applied, and the positions table.
type projection struct{ pool *pgxpool.Pool }

func newProjection(t *testing.T, pool *pgxpool.Pool) projection {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		CREATE TABLE test_applied (n bigserial PRIMARY KEY, event_id uuid NOT NULL, aggregate_id text NOT NULL, sequence bigint NOT NULL,
			skipped boolean NOT NULL DEFAULT false);
		CREATE TABLE test_positions (aggregate_type text, aggregate_id text, last_sequence bigint NOT NULL, PRIMARY KEY (aggregate_type, aggregate_id))`)
	require.NoError(t, err)
	return projection{pool: pool}
}

func (p projection) LastApplied(ctx context.Context, tx pgx.Tx, aggregateType, aggregateID string) (int64, error) {
	var last int64
	err := tx.QueryRow(ctx, `SELECT last_sequence FROM test_positions WHERE aggregate_type = $1 AND aggregate_id = $2 FOR UPDATE`,
		aggregateType, aggregateID).Scan(&last)
	if err == pgx.ErrNoRows {
		return 0, nil
	}
	return last, err
}

func (p projection) SetApplied(ctx context.Context, tx pgx.Tx, aggregateType, aggregateID string, seq int64) error {
	_, err := tx.Exec(ctx, `INSERT INTO test_positions VALUES ($1, $2, $3)
		ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET last_sequence = excluded.last_sequence`, aggregateType, aggregateID, seq)
	return err
}

func (p projection) apply(ctx context.Context, tx pgx.Tx, m natsconsumer.Message) error {
	_, err := tx.Exec(ctx, `INSERT INTO test_applied (event_id, aggregate_id, sequence) VALUES ($1, $2, $3)`, m.EventID, m.AggregateID, m.Sequence)
	return err
}

// skip is the tests' Config.Skipped: a row for the tombstone of an event
// skipped at the producer.
func (p projection) skip(ctx context.Context, tx pgx.Tx, m natsconsumer.Message) error {
	_, err := tx.Exec(ctx, `INSERT INTO test_applied (event_id, aggregate_id, sequence, skipped) VALUES ($1, $2, $3, true)`,
		m.EventID, m.AggregateID, m.Sequence)
	return err
}

type applied struct {
	EventID     uuid.UUID
	AggregateID string
	Sequence    int64
}

// applied lists the applied events in the order they were applied.
func (p projection) applied(t *testing.T) []applied {
	t.Helper()
	var out []applied
	for _, e := range p.effects(t) {
		if !e.Skipped {
			out = append(out, e.applied)
		}
	}
	return out
}

// effect is an applied event, or a skipped one's tombstone (Skipped).
type effect struct {
	applied
	Skipped bool
}

// effects lists the applied events and the skips, in the order they were
// consumed.
func (p projection) effects(t *testing.T) []effect {
	t.Helper()
	rows, err := p.pool.Query(context.Background(), `SELECT event_id, aggregate_id, sequence, skipped FROM test_applied ORDER BY n`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (effect, error) {
		var e effect
		return e, r.Scan(&e.EventID, &e.AggregateID, &e.Sequence, &e.Skipped)
	})
	require.NoError(t, err)
	return out
}

// position is the aggregate's last applied sequence, 0 when none.
func (p projection) position(t *testing.T, aggregateID string) int64 {
	t.Helper()
	var last int64
	err := p.pool.QueryRow(context.Background(), `SELECT coalesce(max(last_sequence), 0) FROM test_positions WHERE aggregate_id = $1`,
		aggregateID).Scan(&last)
	require.NoError(t, err)
	return last
}

// run runs c until the test ends.
func run(t *testing.T, c *natsconsumer.Consumer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("the consumer did not stop")
		}
	})
}

// natsconsumerJS is the JetStream handle natsconsumer.New takes.
type natsconsumerJS = jetstream.JetStream

// countOf counts the lines of logs holding s.
func countOf(logs, s string) int { return strings.Count(logs, s) }

// bufferLogger logs into buf, whose lines a test reads.
func bufferLogger(buf *testlog.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, nil))
}

// pending is how many messages the durable consumer has not had
// acknowledged: delivered and unacked, or not delivered yet.
func pending(t *testing.T, js jetstream.JetStream, stream, name string) (ackPending int, notDelivered uint64) {
	t.Helper()
	c, err := js.Consumer(context.Background(), stream, name)
	require.NoError(t, err)
	info, err := c.Info(context.Background())
	require.NoError(t, err)
	return info.NumAckPending, info.NumPending
}
