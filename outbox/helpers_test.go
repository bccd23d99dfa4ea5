package outbox_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testlog"
)

// testBundle is what most relay tests need.
type testBundle struct {
	pool *pgxpool.Pool
	url  string
	rec  *recorder
}

// recorder is a Publisher that records acknowledged events and delegates the
// answer to fn (nil: acknowledge everything).
type recorder struct {
	mu    sync.Mutex
	acked []outbox.Event
	calls map[uuid.UUID]int
	fn    func(ctx context.Context, e outbox.Event) error
}

func newRecorder(fn func(ctx context.Context, e outbox.Event) error) *recorder {
	return &recorder{fn: fn, calls: map[uuid.UUID]int{}}
}

func (r *recorder) Publish(ctx context.Context, e outbox.Event) error {
	r.mu.Lock()
	r.calls[e.ID]++
	r.mu.Unlock()
	if r.fn != nil {
		if err := r.fn(ctx, e); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.acked = append(r.acked, e)
	r.mu.Unlock()
	return nil
}

func (r *recorder) ackedIDs() map[uuid.UUID]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[uuid.UUID]int{}
	for _, e := range r.acked {
		out[e.ID]++
	}
	return out
}

func (r *recorder) callsFor(id uuid.UUID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[id]
}

func setup(t *testing.T, fn func(ctx context.Context, e outbox.Event) error) *testBundle {
	t.Helper()
	pool, url := testdb.New(t)
	return &testBundle{pool: pool, url: url, rec: newRecorder(fn)}
}

func quietLogger() *slog.Logger { return testlog.Logger() }

// newRelay builds a relay with test-friendly defaults over b's pool.
func (b *testBundle) newRelay(t *testing.T, cfg outbox.RelayConfig) *outbox.PollRelay {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	r, err := outbox.NewPollRelay(b.pool, b.rec, cfg)
	require.NoError(t, err)
	return r
}

// run starts r.Run and returns a function that stops it and waits; the test
// stops it at cleanup in any case.
func run(t *testing.T, r outboxtest.Runner) (stop func()) {
	t.Helper()
	return outboxtest.Run(t, r)
}

// claimIDs runs r's claim and returns the IDs of the events it claimed.
func claimIDs(t *testing.T, r *outbox.PollRelay) []uuid.UUID {
	t.Helper()
	got, _, err := r.ClaimForTest(context.Background())
	require.NoError(t, err)
	return ids(got)
}

// markOne marks the event id published as r, and requires that r's lease
// let it.
func markOne(t *testing.T, r *outbox.PollRelay, id uuid.UUID, msgAndArgs ...any) {
	t.Helper()
	n, err := r.MarkForTest(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, 1, n, msgAndArgs...)
}

// enqueueWith commits events in one transaction through q (the log's, say)
// and returns them as written.
func enqueueWith(t *testing.T, pool *pgxpool.Pool, q *outbox.Enqueuer, events ...outbox.Event) []outbox.Event {
	t.Helper()
	var out []outbox.Event
	require.NoError(t, pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		var err error
		out, err = q.Enqueue(context.Background(), tx, events...)
		return err
	}))
	return out
}

// row is the relay's bookkeeping of one event.
type row struct {
	ClaimedBy   *string
	ClaimUntil  *time.Time
	PublishedAt *time.Time
	Attempts    int
	LastError   *string
	AvailableAt time.Time
	Quarantined *time.Time
}

func readRow(t *testing.T, pool *pgxpool.Pool, id uuid.UUID) row {
	t.Helper()
	r, err := queryRow(pool, id)
	require.NoError(t, err)
	return r
}

func queryRow(pool *pgxpool.Pool, id uuid.UUID) (row, error) {
	var r row
	err := pool.QueryRow(context.Background(),
		`SELECT claimed_by, claim_until, published_at, attempt_count, last_error, available_at, quarantined_at
		 FROM outbox_events WHERE event_id = $1`, id).
		Scan(&r.ClaimedBy, &r.ClaimUntil, &r.PublishedAt, &r.Attempts, &r.LastError, &r.AvailableAt, &r.Quarantined)
	return r, err
}

// published is safe inside eventually: it reports false on errors.
func published(pool *pgxpool.Pool, ids ...uuid.UUID) bool {
	for _, id := range ids {
		r, err := queryRow(pool, id)
		if err != nil || r.PublishedAt == nil {
			return false
		}
	}
	return true
}

func quarantined(pool *pgxpool.Pool, id uuid.UUID) bool {
	r, err := queryRow(pool, id)
	return err == nil && r.Quarantined != nil
}

// eventually waits for cond with a deadline, polling every 20ms.
func eventually(t *testing.T, within time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, within, 20*time.Millisecond, append([]any{msg}, args...)...)
}

// stringer formats as f says when printed: a failure message's state as
// of the failure, not as of the call.
type stringer func() string

func (f stringer) String() string { return f() }

var errFlaky = errors.New("downstream unavailable")
