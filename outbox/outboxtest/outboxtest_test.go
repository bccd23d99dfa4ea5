package outboxtest_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

func setup(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, _ := testdb.New(t)
	return pool
}

func event(t *testing.T, aggType, aggID, typ string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent(aggType, aggID, typ, 1, map[string]string{"id": aggID})
	require.NoError(t, err)
	return e
}

// recordingTB is a testing.TB whose failures are recorded instead of
// failing the test: what the helpers' own tests need to see them fail.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	failed bool
	msgs   []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *recordingTB) Fail()             { r.Errorf("Fail") }
func (r *recordingTB) FailNow()          { r.Fail(); runtime.Goexit() }
func (r *recordingTB) Fatal(args ...any) { r.Error(args...); runtime.Goexit() }
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recordingTB) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// failure runs fn on a recordingTB, in a goroutine of its own (FailNow ends
// it), and returns the failure messages, "" when fn passed.
func failure(t *testing.T, fn func(tb testing.TB)) string {
	t.Helper()
	r := &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.msgs, "\n")
}

// TestRequireEnqueued: exactly one match passes and returns the event with
// its payload; none or two fail with a message that lists what is there.
// RequireNotEnqueued is its opposite. A transaction sees its own events
// before they commit; the pool does not.
func TestRequireEnqueued(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	evs := testdb.Enqueue(t, pool, event(t, "order", "o-1", "OrderCreated"), event(t, "order", "o-1", "OrderCancelled"),
		event(t, "customer", "o-1", "CustomerCreated"))

	got := outboxtest.RequireEnqueued(t, pool, outboxtest.Match{AggregateType: "order", AggregateID: "o-1", Type: "OrderCancelled"})
	require.Equal(t, evs[1].ID, got.ID)
	require.EqualValues(t, 2, got.Sequence)
	require.Equal(t, 1, got.SchemaVersion)
	require.JSONEq(t, `{"id":"o-1"}`, string(got.Payload))
	require.Nil(t, got.PublishedAt)
	require.Equal(t, evs[2].ID, outboxtest.RequireEnqueued(t, pool, outboxtest.Match{ID: evs[2].ID}).ID)

	msg := failure(t, func(tb testing.TB) {
		outboxtest.RequireEnqueued(tb, pool, outboxtest.Match{AggregateType: "order", AggregateID: "o-1"})
	})
	require.Contains(t, msg, "expected exactly one event enqueued matching aggregate order/o-1, found 2")
	require.Contains(t, msg, evs[0].ID.String()+" OrderCreated order/o-1 seq=1 (unpublished)")
	msg = failure(t, func(tb testing.TB) {
		outboxtest.RequireEnqueued(tb, pool, outboxtest.Match{Type: "OrderShipped"})
	})
	require.Contains(t, msg, "matching type OrderShipped, found 0")

	outboxtest.RequireNotEnqueued(t, pool, outboxtest.Match{Type: "OrderShipped"})
	outboxtest.RequireNotEnqueued(t, pool, outboxtest.Match{AggregateType: "invoice"})
	msg = failure(t, func(tb testing.TB) {
		outboxtest.RequireNotEnqueued(tb, pool, outboxtest.Match{AggregateID: "o-1", Type: "CustomerCreated"})
	})
	require.Contains(t, msg, "expected no event enqueued matching aggregate */o-1, type CustomerCreated, found 1")
	require.NotEmpty(t, failure(t, func(tb testing.TB) { outboxtest.RequireNotEnqueued(tb, pool, outboxtest.Match{}) }))

	tx, err := pool.Begin(t.Context())
	require.NoError(t, err)
	defer tx.Rollback(t.Context()) //nolint:errcheck
	_, err = outbox.Enqueue(t.Context(), tx, event(t, "invoice", "i-1", "InvoiceIssued"))
	require.NoError(t, err)
	outboxtest.RequireEnqueued(t, tx, outboxtest.Match{AggregateType: "invoice"})
	outboxtest.RequireNotEnqueued(t, pool, outboxtest.Match{AggregateType: "invoice"})
}

// TestEvents: an aggregate's events in sequence order, aggregates by type
// and ID; none is an empty, non-nil list.
func TestEvents(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	b := testdb.Enqueue(t, pool, event(t, "order", "b", "B1"), event(t, "order", "b", "B2"))
	a := testdb.Enqueue(t, pool, event(t, "order", "a", "A1"))
	b = append(b, testdb.Enqueue(t, pool, event(t, "order", "b", "B3"))...)

	ids := func(events []outboxtest.Event) []uuid.UUID {
		out := []uuid.UUID{}
		for _, e := range events {
			out = append(out, e.ID)
		}
		return out
	}
	require.Equal(t, []uuid.UUID{b[0].ID, b[1].ID, b[2].ID}, ids(outboxtest.Events(t, pool, outboxtest.Match{AggregateType: "order", AggregateID: "b"})))
	require.Equal(t, []uuid.UUID{a[0].ID, b[0].ID, b[1].ID, b[2].ID}, ids(outboxtest.Events(t, pool, outboxtest.Match{})))
	none := outboxtest.Events(t, pool, outboxtest.Match{AggregateID: "c"})
	require.NotNil(t, none)
	require.Empty(t, none)
	t.Cleanup(func() {
		require.Len(t, outboxtest.Events(t, pool, outboxtest.Match{}), 4, "a helper works in a cleanup, after the test's context ended")
	})
}

// TestRunRelay: a real relay publishes to the Recorder, which waits for the
// n-th event; the rows end published. An Answer decides: a permanent error
// quarantines the event, and the Recorder records only acknowledgements.
func TestRunRelay(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	poison := uuid.New()
	rec := &outboxtest.Recorder{Answer: func(_ context.Context, e outbox.Event) error {
		if e.AggregateID == "poison" {
			return outbox.Permanent(errors.New("no route"))
		}
		return nil
	}}
	stop := outboxtest.RunRelay(t, pool, rec, outbox.RelayConfig{})
	evs := testdb.Enqueue(t, pool, event(t, "order", "o-1", "OrderCreated"), event(t, "order", "o-1", "OrderCancelled"),
		event(t, "order", "o-2", "OrderCreated"))
	p := event(t, "order", "poison", "OrderCreated")
	p.ID = poison
	testdb.Enqueue(t, pool, p)

	got := rec.Wait(t, 3, 15*time.Second)
	require.Len(t, got, 3)
	require.ElementsMatch(t, []uuid.UUID{evs[0].ID, evs[1].ID, evs[2].ID}, []uuid.UUID{got[0].ID, got[1].ID, got[2].ID})
	outboxtest.WaitFor(t, pool, outboxtest.Match{AggregateID: "o-1"}, 15*time.Second, outboxtest.AllPublished)
	outboxtest.WaitFor(t, pool, outboxtest.Match{ID: poison}, 15*time.Second, outboxtest.AllQuarantined)
	stop()
	require.Len(t, rec.Events(), 3, "the quarantined event was never acknowledged")
	require.GreaterOrEqual(t, rec.Attempts(), 4)
	for _, e := range outboxtest.Events(t, pool, outboxtest.Match{AggregateType: "order"}) {
		if e.ID == poison {
			require.Empty(t, e.ClaimedBy, "a failure ends the claim")
			continue
		}
		require.NotEmpty(t, e.ClaimedBy, "a published event keeps its publisher")
	}
	stop() // a second stop is a no-op
}

// TestWaitsFail: a wait that is not met fails with what it saw.
func TestWaitsFail(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	ev := testdb.Enqueue(t, pool, event(t, "order", "o-1", "OrderCreated"))[0]
	msg := failure(t, func(tb testing.TB) {
		outboxtest.WaitFor(tb, pool, outboxtest.Match{ID: ev.ID}, 100*time.Millisecond, outboxtest.AllPublished, "event %s", "o-1")
	})
	require.Contains(t, msg, "did not reach the condition within 100ms")
	require.Contains(t, msg, ev.ID.String())
	require.Contains(t, msg, "event o-1")
	require.NotEmpty(t, failure(t, func(tb testing.TB) {
		outboxtest.WaitFor(tb, pool, outboxtest.Match{Type: "Nothing"}, 50*time.Millisecond, outboxtest.AllPublished)
	}), "no event is not all published")

	rec := &outboxtest.Recorder{}
	require.NoError(t, rec.Publish(t.Context(), outbox.Event{ID: ev.ID}))
	require.Len(t, rec.Wait(t, 1, time.Second), 1)
	msg = failure(t, func(tb testing.TB) { rec.Wait(tb, 2, 50*time.Millisecond) })
	require.Contains(t, msg, "1 events published to this recorder within 50ms, want 2")
}

// TestForce: each change writes what the relay or an operator would, in
// order, onto every matching event; no match fails.
func TestForce(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	evs := testdb.Enqueue(t, pool, event(t, "order", "o-1", "OrderCreated"), event(t, "order", "o-1", "OrderCancelled"))
	near := func(want time.Duration, at *time.Time) {
		t.Helper()
		require.NotNil(t, at)
		require.InDelta(t, want.Seconds(), time.Since(*at).Seconds(), 5)
	}

	got := outboxtest.Force(t, pool, outboxtest.Match{AggregateID: "o-1"}, outboxtest.SetOccurred(48*time.Hour), outboxtest.SetPublished(24*time.Hour))
	require.Len(t, got, 2)
	for _, e := range got {
		near(48*time.Hour, &e.OccurredAt)
		near(24*time.Hour, e.PublishedAt)
	}

	e := outboxtest.Force(t, pool, outboxtest.Match{ID: evs[1].ID}, outboxtest.SetReplayRequested())[0]
	require.Nil(t, e.PublishedAt)
	near(0, e.ReplayRequestedAt)
	e = outboxtest.Force(t, pool, outboxtest.Match{ID: evs[1].ID}, outboxtest.SetLeased("relay-7", time.Minute))[0]
	require.Equal(t, "relay-7", e.ClaimedBy)
	near(-time.Minute, e.ClaimUntil)
	require.Equal(t, 1, e.Attempts, "a claim counts an attempt")
	e = outboxtest.Force(t, pool, outboxtest.Match{ID: evs[1].ID}, outboxtest.SetFailed(3, "Unavailable", time.Hour))[0]
	require.Equal(t, 3, e.Attempts)
	require.Equal(t, "Unavailable", e.LastError)
	require.Nil(t, e.ClaimUntil)
	near(-time.Hour, &e.AvailableAt)
	e = outboxtest.Force(t, pool, outboxtest.Match{ID: evs[1].ID}, outboxtest.SetQuarantined(time.Hour, "no route"),
		outboxtest.SetSkipped(time.Minute, "ops", "handled by hand"))[0]
	near(time.Hour, e.QuarantinedAt)
	require.Equal(t, outbox.MaxAttemptsDefault, e.Attempts)
	require.Equal(t, "no route", e.LastError)
	near(time.Minute, e.SkippedAt)
	require.Equal(t, "ops", e.SkippedBy)
	require.Equal(t, "handled by hand", e.SkipReason)
	e = outboxtest.Force(t, pool, outboxtest.Match{ID: evs[1].ID}, outboxtest.SetFailed(2, "", 0))[0]
	require.Empty(t, e.LastError, "an empty error leaves last_error NULL")

	first := outboxtest.RequireEnqueued(t, pool, outboxtest.Match{ID: evs[0].ID})
	require.Nil(t, first.ReplayRequestedAt, "only the matching events change")
	require.Zero(t, first.Attempts)

	msg := failure(t, func(tb testing.TB) {
		outboxtest.Force(tb, pool, outboxtest.Match{AggregateID: "o-2"}, outboxtest.SetPublished(0))
	})
	require.Contains(t, msg, "Force: no event matches aggregate */o-2")
}

// TestDeleteEvents: the matching events are gone, the others stay.
func TestDeleteEvents(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	testdb.Enqueue(t, pool, event(t, "order", "o-1", "OrderCreated"), event(t, "order", "o-1", "OrderCancelled"), event(t, "order", "o-2", "OrderCreated"))
	require.EqualValues(t, 2, outboxtest.DeleteEvents(t, pool, outboxtest.Match{AggregateID: "o-1"}))
	outboxtest.RequireNotEnqueued(t, pool, outboxtest.Match{AggregateID: "o-1"})
	outboxtest.RequireEnqueued(t, pool, outboxtest.Match{AggregateID: "o-2"})
	require.EqualValues(t, 1, outboxtest.DeleteEvents(t, pool, outboxtest.Match{}))
	outboxtest.RequireNotEnqueued(t, pool, outboxtest.Match{})
}

// TestStatementsMatchTheirGoTypes: every statement of outboxtest.sql is
// bound once, and the database describes each with the columns its row type
// reads.
func TestStatementsMatchTheirGoTypes(t *testing.T) {
	t.Parallel()
	pool := setup(t)
	testdb.CheckStatementsOn(t, pool, outboxtest.QueriesForTest(), outboxtest.StatementsForTest()...)
	conn, err := pool.Acquire(t.Context())
	require.NoError(t, err)
	defer conn.Release()

	// The check can fail: a row struct missing a column.
	bad := outboxtest.StatementsForTest()[0]
	require.NotEmpty(t, bad.Columns)
	bad.Columns = bad.Columns[1:]
	require.ErrorContains(t, namedsql.CheckColumns(t.Context(), conn.Conn(), bad), "its row struct's db tags are")
}

// TestNoApplicationDependencies: outboxtest is for other teams' tests, so it
// links nothing of this repository that package outbox does not already
// link, but for the statement loader: no order-app package, no schema of
// the order app.
func TestNoApplicationDependencies(t *testing.T) {
	t.Parallel()
	deps := func(pkg string) map[string]bool {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		require.NoError(t, err, string(out))
		m := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			m[p] = true
		}
		return m
	}
	const module = "github.com/outflow/outflow/"
	allowed := deps("github.com/outflow/outflow/outbox")
	allowed[module+"outbox/outboxtest"] = true
	allowed[module+"outbox/namedsql"] = true
	var extra []string
	for p := range deps("github.com/outflow/outflow/outbox/outboxtest") {
		if strings.HasPrefix(p, module) && !allowed[p] {
			extra = append(extra, p)
		}
	}
	require.Empty(t, extra, "outboxtest links packages of this repository that outbox does not")
}
