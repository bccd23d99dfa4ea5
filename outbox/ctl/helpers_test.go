package ctl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
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
		evs = append(evs, testdb.Event(t, aggregate, typ))
	}
	return testdb.Enqueue(t, b.pool, evs...)
}

func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.pool.Exec(b.ctx, sql, args...)
	require.NoError(t, err)
}

// row is one event with its bookkeeping; it fails the test if the event
// is not in the outbox.
func (b *testBundle) row(t *testing.T, id uuid.UUID) outboxtest.Event {
	t.Helper()
	return outboxtest.RequireEnqueued(t, b.pool, outboxtest.Match{ID: id})
}

// quarantine puts an event where the relay leaves a permanently failing one.
func (b *testBundle) quarantine(t *testing.T, id uuid.UUID, lastError string) {
	t.Helper()
	outboxtest.Force(t, b.pool, outboxtest.Match{ID: id}, outboxtest.SetQuarantined(0, lastError))
}

// force writes changes onto one event (see outboxtest.Force).
func (b *testBundle) force(t *testing.T, id uuid.UUID, changes ...outboxtest.Change) {
	t.Helper()
	outboxtest.Force(t, b.pool, outboxtest.Match{ID: id}, changes...)
}

// runRelay runs a real relay over b's database until the test ends and
// returns the publisher that records what it acknowledged.
func (b *testBundle) runRelay(t *testing.T) *outboxtest.Recorder {
	t.Helper()
	rec := &outboxtest.Recorder{}
	outboxtest.RunRelay(t, b.pool, rec, outbox.RelayConfig{})
	return rec
}

// waitPublished waits until every event is marked published.
func (b *testBundle) waitPublished(t *testing.T, ids ...uuid.UUID) {
	t.Helper()
	for _, id := range ids {
		outboxtest.WaitFor(t, b.pool, outboxtest.Match{ID: id}, 15*time.Second, outboxtest.AllPublished, "event %s published", id)
	}
}

func idsOf(evs ...outbox.Event) []uuid.UUID {
	out := make([]uuid.UUID, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// commands is the library's table, as its binary runs it.
var commands = Commands()

// run runs the library's outboxctl as its main does, the process's
// environment read through os.Getenv.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runIn(ctx, args, stdout, stderr, nil)
}

// runIn is run with the environment environ (nil: the process's).
func runIn(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string) int {
	getenv := os.Getenv
	if environ != nil {
		getenv = func(name string) string {
			for _, kv := range environ {
				if k, v, ok := strings.Cut(kv, "="); ok && k == name {
					return v
				}
			}
			return os.Getenv(name)
		}
	}
	app := &App{Commands: commands, SettleSkipTx: settleOrder}
	return app.Run(ctx, args, Process{
		Stdout: stdout, Stderr: stderr, Stdin: os.Stdin, Interactive: IsTerminal(os.Stdin),
		Getenv: getenv, Hostname: "test-host",
	})
}

// order returns a new aggregate id for events of aggregate type order: the
// library's skip settles nothing, so no row stands behind it (the root's
// outboxctl tests settle an order's projection).
func (b *testBundle) order(t *testing.T) string {
	t.Helper()
	return uuid.NewString()
}

// settleOrder is the tests' App.SettleSkipTx: it says what the root's
// outboxctl settles for an event of aggregate type order (its order's
// projection), without the order app's tables, so the tests see when skip
// calls the hook.
func settleOrder(_ context.Context, _ pgx.Tx, c outboxops.Change) (string, error) {
	if c.Before.AggregateType != "order" {
		return "", nil
	}
	return fmt.Sprintf("order %s's projection settled: sequence %d counts as applied", c.Before.AggregateID, c.Before.Sequence), nil
}
