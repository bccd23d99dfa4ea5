package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/internal/testdb"
	"github.com/outflow/outflow/outbox"
)

// testBundle is a migrated database and a way to run outboxctl on it.
type testBundle struct {
	ctx  context.Context
	pool *pgxpool.Pool
	url  string
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool, url := testdb.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &testBundle{ctx: ctx, pool: pool, url: url}
}

// result is one outboxctl run.
type result struct {
	code           int
	stdout, stderr string
}

// ctl runs outboxctl through its real entry point against b's database.
func (b *testBundle) ctl(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(b.ctx, append(args, "--database-url", b.url), &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// ok runs outboxctl and requires exit status 0.
func (b *testBundle) ok(t *testing.T, args ...string) result {
	t.Helper()
	r := b.ctl(t, args...)
	require.Equal(t, 0, r.code, "outboxctl %v\nstdout: %s\nstderr: %s", args, r.stdout, r.stderr)
	return r
}

// enqueue commits events of one aggregate, one per type given.
func (b *testBundle) enqueue(t *testing.T, aggregate string, types ...string) []outbox.Event {
	t.Helper()
	var evs []outbox.Event
	for _, typ := range types {
		e, err := outbox.NewEvent("order", aggregate, typ, 1, map[string]string{"order_id": aggregate})
		require.NoError(t, err)
		evs = append(evs, e)
	}
	var out []outbox.Event
	require.NoError(t, pgx.BeginFunc(b.ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		out, err = outbox.Enqueue(b.ctx, tx, evs...)
		return err
	}))
	return out
}

func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.pool.Exec(b.ctx, sql, args...)
	require.NoError(t, err)
}

// row is the bookkeeping of one event.
type row struct {
	PublishedAt, QuarantinedAt, SkippedAt, ReplayRequestedAt *time.Time
	Attempts                                                 int
	SkippedBy, SkipReason                                    *string
	AvailableAt                                              time.Time
}

func (b *testBundle) row(t *testing.T, id uuid.UUID) row {
	t.Helper()
	var r row
	require.NoError(t, b.pool.QueryRow(b.ctx, `SELECT published_at, quarantined_at, skipped_at, replay_requested_at,
		attempt_count, skipped_by, skip_reason, available_at FROM outbox_events WHERE event_id = $1`, id).
		Scan(&r.PublishedAt, &r.QuarantinedAt, &r.SkippedAt, &r.ReplayRequestedAt, &r.Attempts, &r.SkippedBy, &r.SkipReason, &r.AvailableAt))
	return r
}

// quarantine puts an event where the relay leaves a permanently failing one.
func (b *testBundle) quarantine(t *testing.T, id uuid.UUID, lastError string) {
	t.Helper()
	b.exec(t, `UPDATE outbox_events SET quarantined_at = now(), attempt_count = 20, last_error = $2 WHERE event_id = $1`, id, lastError)
}

// runRelay runs a relay with an in-process publisher until the test ends and
// returns the events it acknowledged, in order, through a function.
func (b *testBundle) runRelay(t *testing.T) func() []outbox.Event {
	t.Helper()
	acked := make(chan outbox.Event, 1000)
	r, err := outbox.NewRelay(b.pool, outbox.PublisherFunc(func(ctx context.Context, e outbox.Event) error {
		acked <- e
		return nil
	}), outbox.RelayConfig{PollInterval: 50 * time.Millisecond, Logger: quiet()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("relay did not stop")
		}
	})
	var seen []outbox.Event
	return func() []outbox.Event {
		for {
			select {
			case e := <-acked:
				seen = append(seen, e)
			default:
				return seen
			}
		}
	}
}

// waitPublished waits until every event is marked published.
func (b *testBundle) waitPublished(t *testing.T, ids ...uuid.UUID) {
	t.Helper()
	require.Eventually(t, func() bool {
		var n int
		err := b.pool.QueryRow(context.Background(),
			`SELECT count(*) FROM outbox_events WHERE event_id = ANY($1) AND published_at IS NOT NULL`, ids).Scan(&n)
		return err == nil && n == len(ids)
	}, 15*time.Second, 20*time.Millisecond, "events %v published", ids)
}

func idsOf(evs ...outbox.Event) []uuid.UUID {
	out := make([]uuid.UUID, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
