package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// logRecorder is the log relay's publisher: it fails the events in poison
// for their own fault, permanently, those in retry for their own fault
// until the attempts run out, and records every other publish.
type logRecorder struct {
	mu     sync.Mutex
	poison map[uuid.UUID]bool
	retry  map[uuid.UUID]bool
	got    []outbox.Event
}

func (r *logRecorder) Publish(_ context.Context, e outbox.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.poison[e.ID] {
		return outbox.Permanent(errors.New("no route for this event"))
	}
	if r.retry[e.ID] {
		return errors.New("the payload is refused for now")
	}
	r.got = append(r.got, e)
	return nil
}

// published counts the publishes of id, and those of them marked replays.
func (r *logRecorder) published(id uuid.UUID) (n, replays int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.got {
		if e.ID == id {
			n++
			if e.Replay {
				replays++
			}
		}
	}
	return n, replays
}

// enqueueLog commits events to the log (outbox_log) in one transaction.
func (b *testBundle) enqueueLog(t *testing.T, events ...outbox.Event) []outbox.Event {
	t.Helper()
	var out []outbox.Event
	err := pgx.BeginFunc(b.Ctx, b.Pool, func(tx pgx.Tx) error {
		var err error
		out, err = outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true}).Enqueue(b.Ctx, tx, events...)
		return err
	})
	require.NoError(t, err)
	return out
}

// runLogRelay runs a log relay over b's database until the test ends: a
// short poll, and a failing event's two attempts 10 to 50 ms apart.
func (b *testBundle) runLogRelay(t *testing.T, rec *logRecorder) {
	t.Helper()
	b.runLogRelayRetrying(t, rec, 10*time.Millisecond, 2)
}

// runLogRelayRetrying is runLogRelay with a failing event's backoff from
// retry (at most 5 times that) and its attempts.
func (b *testBundle) runLogRelayRetrying(t *testing.T, rec *logRecorder, retry time.Duration, attempts int) {
	t.Helper()
	r, err := outbox.NewRelay(b.Pool, rec, outbox.RelayConfig{
		PollInterval: 100 * time.Millisecond, RetryBase: retry, RetryMax: 5 * retry,
		MaxAttempts: attempts, Logger: quiet(), Source: "log",
	})
	require.NoError(t, err)
	outboxtest.Run(t, r)
}

func eventually(t *testing.T, within time.Duration, cond func() bool, what string) {
	t.Helper()
	require.Eventually(t, cond, within, 20*time.Millisecond, what)
}

// waitLogPublished waits until the cursor passed every event of ids with no
// hold owning it (what replay's plan counts): acknowledged is not enough,
// the advance comes after.
func (b *testBundle) waitLogPublished(t *testing.T, ids ...uuid.UUID) {
	t.Helper()
	eventually(t, 30*time.Second, func() bool {
		for _, id := range ids {
			e, err := outboxops.LogEventByID(b.Ctx, b.Pool, id)
			require.NoError(t, err)
			if e.State() != "published" {
				return false
			}
		}
		return true
	}, "published, the cursor past them")
}

// TestLogOperatorCommands: over the log source, status shows the log's
// cursors, pending events and holds; list --quarantined lists a quarantined
// hold by the event it is stuck on (--json too); show finds a log event;
// retry and skip act on the hold that event heads (a skip only of the head,
// settling the order's projection), the bulk retry counts and retries the
// log's holds with its filters; replay delivers an order's log events again through a
// hold and respects the replay horizon.
func TestLogOperatorCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bad, good := b.order(t), b.order(t)
	evs := b.enqueueLog(t,
		testdb.Event(t, bad, "OrderCreated"), testdb.Event(t, bad, "OrderCancelled"),
		testdb.Event(t, good, "OrderCreated"))
	rec := &logRecorder{poison: map[uuid.UUID]bool{evs[0].ID: true}}
	b.runLogRelay(t, rec)
	eventually(t, 30*time.Second, func() bool {
		hs, err := outboxops.LogHolds(b.Ctx, b.Pool)
		require.NoError(t, err)
		n, _ := rec.published(evs[2].ID)
		return n == 1 && len(hs) == 1 && hs[0].Quarantined
	}, "the good order delivered, the bad one's hold quarantined")

	// status
	r := b.OK(t, "status")
	require.Regexp(t, `log holds\s+1`, r.Stdout)
	require.Regexp(t, `log ranges\s+3\s+\(2 ahead of the sequence`, r.Stdout)
	require.Regexp(t, `quarantined\s+1\s+\(outboxctl list --quarantined`, r.Stdout)
	require.Contains(t, r.Stdout, "horizon age")
	require.Contains(t, r.Stdout, "partition 15")
	var st struct {
		Log *outboxops.LogStatusReport `json:"log"`
	}
	require.NoError(t, json.Unmarshal([]byte(b.OK(t, "status", "--json").Stdout), &st))
	require.NotNil(t, st.Log)
	require.True(t, st.Log.Used)
	require.EqualValues(t, 1, st.Log.Quarantined)
	require.Len(t, st.Log.Partitions, 16, "the log's sixteen partitions")

	// list --quarantined, text and JSON
	r = b.OK(t, "list", "--quarantined")
	require.Contains(t, r.Stdout, evs[0].ID.String())
	require.Contains(t, r.Stdout, "quarantined (log hold, partition")
	require.Contains(t, r.Stdout, `no route for this event"`)
	var listed []map[string]any
	require.NoError(t, json.Unmarshal([]byte(b.OK(t, "list", "--quarantined", "--json").Stdout), &listed))
	require.Len(t, listed, 1)
	require.Equal(t, evs[0].ID.String(), listed[0]["event_id"])
	require.Equal(t, "log", listed[0]["source"])
	require.Equal(t, "quarantined", listed[0]["state"])
	require.EqualValues(t, 1, listed[0]["aggregate_sequence"])
	r = b.OK(t, "list", "--quarantined", "--aggregate-type", "invoice")
	require.Contains(t, r.Stderr, "no events match")

	// show finds it in the log
	r = b.OK(t, "show", evs[0].ID.String(), "--temporal=false")
	require.Regexp(t, `state\s+quarantined`, r.Stdout)
	require.Contains(t, r.Stdout, bad)

	// the bulk retry counts the log's hold (a dry run without a terminal),
	// and its filters apply to it
	r = b.OK(t, "retry", "--quarantined")
	require.Contains(t, r.Stdout, "1 quarantined log holds")
	require.Contains(t, r.Stdout, "dry run")
	r = b.OK(t, "retry", "--quarantined", "--error-contains", "timeout")
	require.Contains(t, r.Stdout, "no quarantined events match")

	// retry one: the hold is retried, fails again and is quarantined again
	r = b.OK(t, "retry", evs[0].ID.String(), "--yes")
	require.Contains(t, r.Stdout, "retried the log hold of order/"+bad)
	require.Contains(t, r.Stderr, "log hold retried")
	eventually(t, 30*time.Second, func() bool {
		hs, err := outboxops.LogHolds(b.Ctx, b.Pool)
		require.NoError(t, err)
		return len(hs) == 1 && hs[0].Quarantined && hs[0].Attempts > 0
	}, "retried and quarantined again")
	r = b.OK(t, "retry", "--quarantined", "--error-contains", "NO ROUTE", "--reason", "route fixed (OPS-6)", "--yes")
	require.Contains(t, r.Stdout, "retried 0 quarantined events")
	require.Contains(t, r.Stdout, "retried 1 quarantined log holds")
	require.Contains(t, r.Stderr, "log hold retried")
	require.Contains(t, r.Stderr, "OPS-6")
	var events, logHolds int64
	var finished bool
	require.NoError(t, b.Pool.QueryRow(b.Ctx, `SELECT events, log_holds, finished_at IS NOT NULL FROM outbox_bulk_retries
		WHERE reason = 'route fixed (OPS-6)'`).Scan(&events, &logHolds, &finished))
	require.Equal(t, []any{int64(0), int64(1), true}, []any{events, logHolds, finished}, "the audit row counts the log's hold")
	eventually(t, 30*time.Second, func() bool {
		hs, err := outboxops.LogHolds(b.Ctx, b.Pool)
		require.NoError(t, err)
		return len(hs) == 1 && hs[0].Quarantined && hs[0].Attempts > 0
	}, "bulk-retried and quarantined again")
	r = b.Ctl(t, "retry", evs[2].ID.String(), "--yes")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "use replay")
	r = b.Ctl(t, "retry", uuid.NewString(), "--yes")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "nor is it in the log")

	// skip: only the head, then the order's later event flows
	r = b.Ctl(t, "skip", evs[1].ID.String(), "--reason", "not the head", "--yes")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "not the head of a quarantined hold")
	r = b.OK(t, "skip", evs[0].ID.String(), "--reason", "no route, ever (OPS-7)", "--actor", "ada", "--yes")
	require.Contains(t, r.Stdout, "skipped "+evs[0].ID.String())
	require.Contains(t, r.Stdout, "projection settled: sequence 1 counts as applied")
	require.Contains(t, r.Stderr, "log event skipped")
	eventually(t, 30*time.Second, func() bool {
		n, _ := rec.published(evs[1].ID)
		hs, err := outboxops.LogHolds(b.Ctx, b.Pool)
		require.NoError(t, err)
		return n == 1 && len(hs) == 0
	}, "the order's next event delivered, the hold released")
	n, _ := rec.published(evs[0].ID)
	require.Zero(t, n, "a skipped event is never published")
	r = b.OK(t, "show", evs[0].ID.String(), "--temporal=false")
	require.Regexp(t, `state\s+skipped`, r.Stdout)

	// replay: refused before the replay horizon, then delivered again
	require.NoError(t, outboxops.RecordReplayHorizon(b.Ctx, b.Pool, time.Hour, "test namespace keeps 1h"))
	to := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	r = b.Ctl(t, "replay", "--from", time.Now().Add(-2*time.Hour).UTC().Format(time.RFC3339), "--to", to,
		"--aggregate", good, "--aggregate-type", "order", "--yes")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "before the replay horizon")
	from := time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339)
	r = b.OK(t, "replay", "--from", from, "--to", to, "--aggregate", good, "--aggregate-type", "order")
	require.Contains(t, r.Stdout, "dry run", "no terminal and no --yes: a dry run")
	r = b.OK(t, "replay", "--from", from, "--to", to, "--aggregate", good, "--aggregate-type", "order", "--yes")
	require.Contains(t, r.Stdout, "1 published log events of aggregate order/"+good)
	require.Contains(t, r.Stdout, "replayed 1 events")
	eventually(t, 30*time.Second, func() bool {
		n, replays := rec.published(evs[2].ID)
		return n == 2 && replays == 1
	}, "the good order's event delivered again, as a replay")
}

// TestLogListPending: list --pending lists the log's events after their
// partitions' cursors, oldest first, with the aggregate filters and the
// limit, and the events a retrying hold owns ("held", with its last error);
// never a quarantined hold's, nor a published event.
func TestLogListPending(t *testing.T) {
	t.Parallel()
	b := setup(t)
	one, two := b.order(t), b.order(t)
	evs := b.enqueueLog(t,
		testdb.Event(t, one, "OrderCreated"), testdb.Event(t, one, "OrderCancelled"),
		testdb.Event(t, two, "OrderCreated"))

	// No relay yet: all three wait after their cursors.
	r := b.OK(t, "list", "--pending")
	for _, e := range evs {
		require.Contains(t, r.Stdout, e.ID.String())
	}
	require.Contains(t, r.Stdout, "pending (log, partition")
	require.Less(t, strings.Index(r.Stdout, evs[0].ID.String()), strings.Index(r.Stdout, evs[1].ID.String()), "an order's events in order")
	r = b.OK(t, "list", "--pending", "--aggregate", two)
	require.Contains(t, r.Stdout, evs[2].ID.String())
	require.NotContains(t, r.Stdout, evs[0].ID.String())
	require.Len(t, strings.Split(strings.TrimSpace(b.OK(t, "list", "--pending", "--limit", "2").Stdout), "\n"), 2)
	require.Contains(t, b.OK(t, "list", "--pending", "--aggregate-type", "invoice").Stderr, "no events match")
	var listed []map[string]any
	require.NoError(t, json.Unmarshal([]byte(b.OK(t, "list", "--pending", "--json").Stdout), &listed))
	require.Len(t, listed, 3)
	for _, l := range listed {
		require.Equal(t, "log", l["source"])
		require.Equal(t, "pending", l["state"])
	}
	require.Contains(t, b.OK(t, "list", "--quarantined").Stderr, "no events match")

	// A relay whose publisher refuses the first order's head for now: that
	// order's hold owns both its events and retries them after a minute;
	// the second order's event is published.
	rec := &logRecorder{retry: map[uuid.UUID]bool{evs[0].ID: true}}
	b.runLogRelayRetrying(t, rec, time.Minute, 100)
	eventually(t, 30*time.Second, func() bool {
		hs, err := outboxops.LogHolds(b.Ctx, b.Pool)
		require.NoError(t, err)
		n, _ := rec.published(evs[2].ID)
		return n == 1 && len(hs) == 1 && hs[0].Attempts >= 1 && !hs[0].Quarantined
	}, "the second order published, the first one's hold retrying")
	r = b.OK(t, "list", "--pending")
	require.Contains(t, r.Stdout, evs[0].ID.String())
	require.Contains(t, r.Stdout, evs[1].ID.String())
	require.NotContains(t, r.Stdout, evs[2].ID.String(), "published")
	require.Contains(t, r.Stdout, "held (log, partition")
	require.Contains(t, r.Stdout, "the payload is refused for now")
	listed = nil
	require.NoError(t, json.Unmarshal([]byte(b.OK(t, "list", "--pending", "--json").Stdout), &listed))
	require.Len(t, listed, 2)
	require.Equal(t, "held", listed[0]["state"])
	require.Equal(t, evs[0].ID.String(), listed[0]["event_id"])
	require.Equal(t, true, listed[0]["head"])
}

// replayWindow is replay's arguments for order's log events of the last
// ten minutes.
func replayWindow(order string) []string {
	return []string{"replay", "--from", time.Now().Add(-10 * time.Minute).UTC().Format(time.RFC3339),
		"--to", time.Now().Add(time.Minute).UTC().Format(time.RFC3339), "--aggregate", order, "--aggregate-type", "order", "--yes"}
}

// TestLogReplayPassesASkippedEvent is issue 37's case: an order's events 1,
// 2, 3 on the log; 2 fails for good and is skipped; 3 is delivered. A
// replay of the order from 1 plans and delivers 1 and 3 again, never 2,
// though the publisher would now take it.
func TestLogReplayPassesASkippedEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	order := b.order(t)
	evs := b.enqueueLog(t, testdb.Event(t, order, "OrderCreated"), testdb.Event(t, order, "OrderPaid"),
		testdb.Event(t, order, "OrderCancelled"))
	rec := &logRecorder{poison: map[uuid.UUID]bool{evs[1].ID: true}}
	b.runLogRelay(t, rec)
	eventually(t, 30*time.Second, func() bool {
		hs, err := outboxops.LogHolds(b.Ctx, b.Pool)
		require.NoError(t, err)
		return len(hs) == 1 && hs[0].Quarantined
	}, "sequence 2 quarantined")
	r := b.OK(t, "skip", evs[1].ID.String(), "--reason", "no route, ever (OPS-9)", "--yes")
	require.Contains(t, r.Stdout, "it will never be published")
	b.waitLogPublished(t, evs[0].ID, evs[2].ID)
	rec.mu.Lock()
	delete(rec.poison, evs[1].ID) // the publisher would take it now
	rec.mu.Unlock()

	r = b.OK(t, replayWindow(order)...)
	require.Contains(t, r.Stdout, "2 published log events of aggregate order/"+order, "the plan counts what is delivered")
	require.Contains(t, r.Stdout, "replayed 2 events")
	eventually(t, 30*time.Second, func() bool {
		n, replays := rec.published(evs[2].ID)
		hs, err := outboxops.LogHolds(b.Ctx, b.Pool)
		require.NoError(t, err)
		return n == 2 && replays == 1 && len(hs) == 0
	}, "sequence 3 delivered again, the replay's hold released")
	n, _ := rec.published(evs[0].ID)
	require.Equal(t, 2, n, "sequence 1 delivered again")
	n, _ = rec.published(evs[1].ID)
	require.Zero(t, n, "the skipped sequence 2 is never published")
	require.Regexp(t, `state\s+skipped`, b.OK(t, "show", evs[1].ID.String(), "--temporal=false").Stdout)
}

// TestLogSkipOfARedelivery: a replay whose redelivery of an event delivered
// before fails for good is quarantined on it; skip gives up that
// redelivery only (issue 37): the event stays published (show says so),
// the order's projection settles nothing, and the replay goes on.
func TestLogSkipOfARedelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	order := b.order(t)
	evs := b.enqueueLog(t, testdb.Event(t, order, "OrderCreated"), testdb.Event(t, order, "OrderCancelled"))
	rec := &logRecorder{poison: map[uuid.UUID]bool{}}
	b.runLogRelay(t, rec)
	b.waitLogPublished(t, evs[0].ID, evs[1].ID)
	rec.mu.Lock()
	rec.poison[evs[0].ID] = true // its workflow type is gone, say
	rec.mu.Unlock()
	b.OK(t, replayWindow(order)...)
	eventually(t, 30*time.Second, func() bool {
		hs, err := outboxops.LogHolds(b.Ctx, b.Pool)
		require.NoError(t, err)
		return len(hs) == 1 && hs[0].Quarantined && hs[0].Replay
	}, "the redelivery of sequence 1 quarantined")

	r := b.OK(t, "skip", evs[0].ID.String(), "--reason", "workflow type retired (OPS-10)", "--yes")
	require.Contains(t, r.Stdout, "skipped the redelivery of "+evs[0].ID.String())
	require.Contains(t, r.Stdout, "stays published")
	require.NotContains(t, r.Stdout, "projection settled")
	require.Contains(t, r.Stderr, "redelivery skipped")
	eventually(t, 30*time.Second, func() bool {
		n, replays := rec.published(evs[1].ID)
		hs, err := outboxops.LogHolds(b.Ctx, b.Pool)
		require.NoError(t, err)
		return n == 2 && replays == 1 && len(hs) == 0
	}, "the replay went on with sequence 2, its hold released")
	require.Regexp(t, `state\s+published`, b.OK(t, "show", evs[0].ID.String(), "--temporal=false").Stdout)
}

// TestLogReplayRefusedWhileRetentionDropsItsTail: an order whose later
// event lies in a range retention is dropping (retiring) is not replayed in
// part (issue 37): outboxctl refuses the window and says where a window may
// start; nothing is replayed.
func TestLogReplayRefusedWhileRetentionDropsItsTail(t *testing.T) {
	t.Parallel()
	b := setup(t)
	order := b.order(t)
	const width = 10_000_000 // outbox_log_range_width(): the first event in outbox_log_r0, the second in r1
	b.enqueueLog(t, testdb.Event(t, order, "OrderCreated"))
	b.Exec(t, `SELECT setval('outbox_log_pos', $1)`, int64(width+5))
	evs := b.enqueueLog(t, testdb.Event(t, order, "OrderCancelled"))
	rec := &logRecorder{}
	b.runLogRelay(t, rec)
	b.waitLogPublished(t, evs[0].ID)
	// RetainLog's T3 marked r1 retiring: sealed now, its drop to come.
	b.Exec(t, `SELECT setval('outbox_log_pos', $1)`, int64(2*width+5))
	b.Exec(t, `UPDATE outbox_log_ranges SET sealed_at = now(), sealed_xmax = 1, retiring_at = now() WHERE lo = $1`, int64(width))

	r := b.Ctl(t, replayWindow(order)...)
	require.Equal(t, 1, r.Code, "stdout: %s", r.Stdout)
	require.Contains(t, r.Stderr, "before the log's retention horizon")
	require.Contains(t, r.Stderr, "start the window at or after it")
	hs, err := outboxops.LogHolds(b.Ctx, b.Pool)
	require.NoError(t, err)
	require.Empty(t, hs, "nothing replayed")
}
