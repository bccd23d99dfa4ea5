// Package ctltest runs an outboxctl in a test against a migrated database
// of its own, and checks its flag style: the helpers outbox/ctl's tests
// and those of a binary that adds to its command table (outflow's
// cmd/outboxctl) share. The binary is given as its entry point ([Run]).
package ctltest

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// Run is an outboxctl's entry point: it runs args, writing on stdout and
// stderr, and returns the exit status.
type Run func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Bundle is a migrated database (testdb.New) and a way to run an outboxctl
// on it.
type Bundle struct {
	// Ctx ends two minutes after [New], or with the test.
	Ctx context.Context
	// Pool is the database's pool and URL its connection string.
	Pool *pgxpool.Pool
	URL  string
	// Main is the outboxctl [Bundle.Ctl] runs.
	Main Run
}

// New returns a bundle of a new database, running run.
func New(t *testing.T, run Run) *Bundle {
	t.Helper()
	pool, url := testdb.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &Bundle{Ctx: ctx, Pool: pool, URL: url, Main: run}
}

// Result is one outboxctl run.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// Ctl runs the outboxctl with args and --database-url of b's database.
func (b *Bundle) Ctl(t *testing.T, args ...string) Result {
	t.Helper()
	var out, errb bytes.Buffer
	code := b.Main(b.Ctx, append(args, "--database-url", b.URL), &out, &errb)
	return Result{Code: code, Stdout: out.String(), Stderr: errb.String()}
}

// OK is [Bundle.Ctl] requiring exit status 0.
func (b *Bundle) OK(t *testing.T, args ...string) Result {
	t.Helper()
	r := b.Ctl(t, args...)
	require.Equal(t, 0, r.Code, "outboxctl %v\nstdout: %s\nstderr: %s", args, r.Stdout, r.Stderr)
	return r
}

// Enqueue commits events of one aggregate, one per type given.
func (b *Bundle) Enqueue(t *testing.T, aggregate string, types ...string) []outbox.Event {
	t.Helper()
	var evs []outbox.Event
	for _, typ := range types {
		evs = append(evs, testdb.Event(t, aggregate, typ))
	}
	return testdb.Enqueue(t, b.Pool, evs...)
}

// EnqueueTyped commits one event of an aggregate of any type.
func (b *Bundle) EnqueueTyped(t *testing.T, aggregateType, aggregateID, eventType string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent(aggregateType, aggregateID, eventType, 1, map[string]string{"id": aggregateID})
	require.NoError(t, err)
	return testdb.Enqueue(t, b.Pool, e)[0]
}

// Exec runs a statement on b's database, requiring it to succeed.
func (b *Bundle) Exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.Pool.Exec(b.Ctx, sql, args...)
	require.NoError(t, err)
}

// Row is one event with its bookkeeping; it fails the test if the event
// is not in the outbox.
func (b *Bundle) Row(t *testing.T, id uuid.UUID) outboxtest.Event {
	t.Helper()
	return outboxtest.RequireEnqueued(t, b.Pool, outboxtest.Match{ID: id})
}

// Quarantine puts an event where the relay leaves a permanently failing one.
func (b *Bundle) Quarantine(t *testing.T, id uuid.UUID, lastError string) {
	t.Helper()
	b.Force(t, id, outboxtest.SetQuarantined(0, lastError))
}

// Force writes changes onto one event (see outboxtest.Force).
func (b *Bundle) Force(t *testing.T, id uuid.UUID, changes ...outboxtest.Change) {
	t.Helper()
	outboxtest.Force(t, b.Pool, outboxtest.Match{ID: id}, changes...)
}

// RunRelay runs a real relay over b's database until the test ends and
// returns the publisher that records what it acknowledged.
func (b *Bundle) RunRelay(t *testing.T) *outboxtest.Recorder {
	t.Helper()
	rec := &outboxtest.Recorder{}
	outboxtest.RunRelay(t, b.Pool, rec, outbox.RelayConfig{})
	return rec
}

// WaitPublished waits until every event is marked published.
func (b *Bundle) WaitPublished(t *testing.T, ids ...uuid.UUID) {
	t.Helper()
	for _, id := range ids {
		outboxtest.WaitFor(t, b.Pool, outboxtest.Match{ID: id}, 15*time.Second, outboxtest.AllPublished, "event %s published", id)
	}
}

// IDs are the events' IDs, in order.
func IDs(evs ...outbox.Event) []uuid.UUID {
	out := make([]uuid.UUID, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// singleDashLong is a flag longer than one letter written with one dash
// (-database-url) where a help line or a message names a flag.
var singleDashLong = regexp.MustCompile("(?m)(^|[ `\\[(\"])-[a-z][a-z0-9]+(-[a-z0-9]+)*\\b")

// RequireOneFlagStyle walks run's own help, every command's -h and `help
// COMMAND`, and a bad flag of each: every flag is written --name, in the
// flag lists and in the messages. commands are the command table's names.
func RequireOneFlagStyle(t *testing.T, run Run, commands []string) {
	t.Helper()
	ctx := context.Background()
	check := func(wantCode int, args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(ctx, args, &out, &errb)
		require.Equal(t, wantCode, code, "outboxctl %v\nstdout: %s\nstderr: %s", args, out.String(), errb.String())
		require.NotRegexp(t, singleDashLong, out.String(), "outboxctl %v", args)
		require.NotRegexp(t, singleDashLong, errb.String(), "outboxctl %v", args)
	}
	check(0, "-h")
	check(0, "help")
	check(2, "--no-such-flag")
	for _, name := range commands {
		check(0, name, "-h")
		check(0, name, "--help")
		check(0, "help", name)
		check(2, name, "--no-such-flag")
		if name != "help" { // help's argument is a command: it echoes it as typed
			check(2, name, "-no-such-flag")
		}
	}
	require.Regexp(t, singleDashLong, "  -database-url URL", "the check sees a single-dash flag")
}
