package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// The switches between outbox_events (poll, cdc) and the log, driven as an
// operator drives them: the producers write to the log or not
// (EnqueueConfig.Log, what OUTFLOW_RELAY_SOURCE=log sets in theirs), the
// starter binary is restarted with OUTFLOW_RELAY_SOURCE, and the operator
// retries a quarantined event with outboxctl retry's function. Each event
// starts a workflow of its own (workflow ID = event ID), so the start
// times tell the order in which the relay published an order's events.

// switchRoutes routes switchStep events to a workflow type no worker runs:
// its start is all these tests look at.
const switchRoutes = "OUTFLOW_ROUTES=SwitchStep=SwitchStepWorkflow"

// switchStep is an event of order orderID that starts a workflow.
func switchStep(t *testing.T, orderID string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent("order", orderID, "SwitchStep", 1, map[string]string{"order_id": orderID})
	require.NoError(t, err)
	return e
}

// logProducer enqueues as a producer with OUTFLOW_RELAY_SOURCE=log does.
var logProducer = outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true})

// toLog commits e to the log; toOutbox commits e to outbox_events.
func toLog(t *testing.T, pool *pgxpool.Pool, e outbox.Event) outbox.Event {
	t.Helper()
	return testdb.EnqueueWith(t, pool, logProducer, e)[0]
}

// toOutbox enqueues e as a producer whose transaction read the poll source
// (before an operator switched the database, or after it switched back):
// to outbox_events, whatever the database says now.
func toOutbox(t *testing.T, pool *pgxpool.Pool, e outbox.Event) outbox.Event {
	t.Helper()
	return testdb.EnqueueAsRead(t, pool, "poll", e)[0]
}

// started reports whether e's workflow was started.
func started(e outbox.Event) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := temporal.Client().DescribeWorkflow(ctx, e.ID.String(), "")
	return err == nil
}

// waitStarted waits until every one of events has its workflow, failing
// with why when one has none within d.
func waitStarted(t *testing.T, d time.Duration, why string, events ...outbox.Event) {
	t.Helper()
	for _, e := range events {
		require.Eventually(t, func() bool { return started(e) }, d, 100*time.Millisecond,
			"event %s (%s#%d) has no workflow after %s: %s", e.ID, e.AggregateID, e.Sequence, d, why)
	}
}

// waitReaderHolds waits until the log's reader has read e's batch and not
// finished it (its partition's tries is 1): with log.after_read=sleep it
// sleeps there, e unpublished, the cursor before it.
func waitReaderHolds(t *testing.T, pool *pgxpool.Pool, e outbox.Event) {
	t.Helper()
	ctx := context.Background()
	infos, err := outboxops.LogEvents(ctx, pool, e.AggregateType, e.AggregateID)
	require.NoError(t, err)
	partition := -1
	for _, i := range infos {
		if i.ID == e.ID {
			partition = i.Partition
		}
	}
	require.NotEqual(t, -1, partition, "event %s is in the log", e.ID)
	require.Eventually(t, func() bool {
		st, err := outboxops.LogStatus(ctx, pool)
		require.NoError(t, err)
		return st.Partitions[partition].Tries == 1
	}, 30*time.Second, 20*time.Millisecond, "the log's reader never read partition %d", partition)
}

// TestRelaySourceLogSwitchesPastAQuarantine: an order has events 1, 2 and
// 3 in outbox_events, 2 quarantined, when the database switches to the
// log (its producers write 4 there, and another order's event). The
// starter with OUTFLOW_RELAY_SOURCE=log does not wait for 3 (its lane waits
// for 2, which waits for an operator): it reads the log, and the other
// order's event is published. The order waits in both tables: 3 stays
// behind 2, and 4 behind 3, under a hold of the log, not published before
// them. Once the operator retries 2, the order's events 2, 3 and 4 are
// published in sequence.
func TestRelaySourceLogSwitchesPastAQuarantine(t *testing.T) {
	t.Parallel()
	pool, url := testdb.New(t)
	tq := "src-logq3-" + uuid.NewString()[:8]
	order := "switch-q-" + uuid.NewString()
	e1 := toOutbox(t, pool, switchStep(t, order))
	e2 := toOutbox(t, pool, switchStep(t, order))
	e3 := toOutbox(t, pool, switchStep(t, order))
	outboxtest.Force(t, pool, outboxtest.Match{ID: e2.ID}, outboxtest.SetQuarantined(time.Minute, "test poison"))
	e4 := toLog(t, pool, switchStep(t, order))
	other := toLog(t, pool, switchStep(t, "switch-other-"+uuid.NewString()))
	require.Equal(t, []int64{1, 2, 3, 4}, []int64{e1.Sequence, e2.Sequence, e3.Sequence, e4.Sequence}, "one order's sequence across both tables")

	p := startStarter(t, url, tq, "OUTFLOW_RELAY_SOURCE=log", switchRoutes)
	require.Eventually(t, func() bool { return strings.Contains(p.output(), "log source: reading the log") }, 30*time.Second, 20*time.Millisecond,
		"the switch to the log never ended: it waits for event 3 of outbox_events, which waits behind quarantined event 2, "+
			"and the log's events of every order wait with it")
	waitStarted(t, 30*time.Second, "the other order's log event is published once the log is read", e1, other)
	require.Contains(t, p.output(), "quarantined events are left in outbox_events")
	require.Contains(t, p.output(), e2.ID.String())

	// 4 waits under a hold of the log, behind 3, which waits behind 2.
	require.Eventually(t, func() bool {
		hs, err := outboxops.LogHolds(context.Background(), pool)
		require.NoError(t, err)
		return len(hs) == 1 && hs[0].AggregateID == order && !hs[0].Quarantined && strings.Contains(hs[0].LastError, "outbox_events")
	}, 30*time.Second, 20*time.Millisecond, "the order's log event waits under a hold for its events in outbox_events")
	require.False(t, started(e4), "event 4 (log) is not published before 3, which waits behind quarantined 2")
	require.False(t, started(e3), "event 3 waits behind quarantined 2")
	require.Equal(t, 0, countPublished(t, pool, []outbox.Event{e2, e3}))

	// The operator retries 2 under the log source: 2, 3 and 4 go, in sequence.
	_, err := outboxops.Retry(context.Background(), pool, e2.ID)
	require.NoError(t, err)
	waitStarted(t, 60*time.Second, "the order goes on once its quarantined event is retried", e2, e3, e4)
	// The hold is released when 4's publish is recorded, a moment after its
	// workflow starts: wait for that before stopping the starter.
	require.Eventually(t, func() bool {
		hs, err := outboxops.LogHolds(context.Background(), pool)
		require.NoError(t, err)
		return len(hs) == 0
	}, 30*time.Second, 20*time.Millisecond, "the order's hold was released")
	p.terminate(t)
	requireStartedBefore(t, e2, e3, "2 before 3")
	requireStartedBefore(t, e3, e4, "3 (outbox_events) before 4 (the log)")
	requireWorkflowCount(t, tq, 5)
}

// TestRelaySourceLeaveProducersFirst: switching back from the log with the
// producers restarted first. The log starter's reader holds an order's
// event 1 of the log unpublished (log.after_read sleeps) while the producer,
// back on outbox_events, writes its event 2 there and another order's
// event. The log starter's poll sweeper publishes the other order's event
// but not 2 before 1. Then the starter is restarted on poll and the order
// goes on.
func TestRelaySourceLeaveProducersFirst(t *testing.T) {
	t.Parallel()
	pool, url := testdb.New(t)
	tq := "src-leavep-" + uuid.NewString()[:8]
	order := "switch-p-" + uuid.NewString()
	p := startStarter(t, url, tq, "OUTFLOW_RELAY_SOURCE=log", switchRoutes, "OUTFLOW_RELAY_IN_FLIGHT=1",
		"OUTFLOW_FAILPOINTS=log.after_read=sleep:15s")
	p.waitLog(t, "log source: reading the log")
	e1 := toLog(t, pool, switchStep(t, order))
	waitReaderHolds(t, pool, e1)

	// The producers are back on poll.
	e2 := toOutbox(t, pool, switchStep(t, order))
	other := toOutbox(t, pool, switchStep(t, "switch-other-"+uuid.NewString()))
	waitPublished(t, pool, []outbox.Event{other}, 30*time.Second)
	require.False(t, started(e1), "the reader still holds event 1 (the window this test needs): the sweeper ran while it was unpublished")
	waitStarted(t, 60*time.Second, "the order's events are published once its log event is", e1, e2)
	requireStartedBefore(t, e1, e2, "event 1 (the log) before 2 (outbox_events, written after it)")
	p.terminate(t)
	require.Contains(t, p.output(), "written to outbox_events after this database switched to the log")

	// The operator switched the database back to poll and the starter
	// restarted: the order goes on.
	_, err := outboxops.SetSource(context.Background(), pool, outboxops.SourcePoll, "test", "leave the log")
	require.NoError(t, err)
	q := startStarter(t, url, tq, switchRoutes)
	e3 := toOutbox(t, pool, switchStep(t, order))
	waitStarted(t, 30*time.Second, "the poll starter publishes outbox_events", e3)
	q.terminate(t)
	requireStartedBefore(t, e2, e3, "2 before 3")
	requireWorkflowCount(t, tq, 4)
}

// TestRelaySourceLeaveStartersFirst: switching back from the log with the
// starters restarted first. The poll starter drains the log and reads
// outbox_events with its log relay beside; a producer still on the log
// writes an order's event 1 there, which the log relay's reader holds
// unpublished (log.after_read sleeps), while a producer already back on
// poll writes the order's event 2 to outbox_events and another order's
// event. The poll relay publishes the other order's event but not 2 before
// 1.
func TestRelaySourceLeaveStartersFirst(t *testing.T) {
	t.Parallel()
	pool, url := testdb.New(t)
	tq := "src-leaves-" + uuid.NewString()[:8]
	order := "switch-s-" + uuid.NewString()
	// The database is on the log.
	p := startStarter(t, url, tq, "OUTFLOW_RELAY_SOURCE=log", switchRoutes)
	e0 := toLog(t, pool, switchStep(t, order))
	waitStarted(t, 30*time.Second, "the log starter publishes the log", e0)
	p.terminate(t)

	// The operator switched the database back to poll (`outboxctl source
	// set poll`), and the starter restarted.
	_, err := outboxops.SetSource(context.Background(), pool, outboxops.SourcePoll, "test", "leave the log")
	require.NoError(t, err)
	q := startStarter(t, url, tq, switchRoutes, "OUTFLOW_RELAY_IN_FLIGHT=1", "OUTFLOW_FAILPOINTS=log.after_read=sleep:15s")
	q.waitLog(t, "log source left: reading outbox_events, the log relay beside it")
	e1 := toLog(t, pool, switchStep(t, order)) // a producer still on the log
	waitReaderHolds(t, pool, e1)
	e2 := toOutbox(t, pool, switchStep(t, order)) // a producer back on poll
	other := toOutbox(t, pool, switchStep(t, "switch-other-"+uuid.NewString()))
	waitPublished(t, pool, []outbox.Event{other}, 30*time.Second)
	require.False(t, started(e1), "the reader still holds event 1 (the window this test needs): the poll relay ran while it was unpublished")
	waitStarted(t, 60*time.Second, "the order's events are published once its log event is", e1, e2)
	q.terminate(t)
	requireStartedBefore(t, e0, e1, "0 before 1")
	requireStartedBefore(t, e1, e2, "event 1 (the log) before 2 (outbox_events, written after it)")
	require.Contains(t, q.output(), "written to the log after this database switched back")
	requireWorkflowCount(t, tq, 4)
}

// TestRelaySourcePollNoticesTheLog: a poll starter on a database whose log
// was never written runs no log relay; a producer that writes to the log
// afterwards (OUTFLOW_RELAY_SOURCE=log before its starter) does not strand
// its events there: the starter notices within seconds, names it in an
// error line and publishes the log beside outbox_events, the order's
// later event in outbox_events after its event in the log.
func TestRelaySourcePollNoticesTheLog(t *testing.T) {
	t.Parallel()
	pool, url := testdb.New(t)
	tq := "src-notice-" + uuid.NewString()[:8]
	order := "switch-n-" + uuid.NewString()
	e0 := toOutbox(t, pool, switchStep(t, order))
	p := startStarter(t, url, tq, switchRoutes)
	waitStarted(t, 30*time.Second, "the poll starter publishes outbox_events", e0)
	require.NotContains(t, p.output(), "outbox log relay", "no log relay for a log never written")

	e1 := toLog(t, pool, switchStep(t, order))
	e2 := toOutbox(t, pool, switchStep(t, order))
	waitStarted(t, 30*time.Second, "a log event written after the poll starter found the log unused is stranded: no relay reads the log", e1, e2)
	p.terminate(t)
	requireStartedBefore(t, e0, e1, "0 before 1")
	requireStartedBefore(t, e1, e2, "event 1 (the log) before 2 (outbox_events)")
	require.Contains(t, p.output(), "an event was written to the log, which was unused when this starter began")
	requireWorkflowCount(t, tq, 3)
}
