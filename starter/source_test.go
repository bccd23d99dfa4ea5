package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestRelaySourceRejectsUnknownValue: a typo in OUTFLOW_RELAY_SOURCE stops
// the starter at once with an error naming both sources.
func TestRelaySourceRejectsUnknownValue(t *testing.T) {
	t.Parallel()
	_, url := testdb.New(t)
	p := startStarter(t, url, "src-"+uuid.NewString()[:8], "OUTFLOW_RELAY_SOURCE=kafka")
	err := p.wait(t, 30*time.Second)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode(), "a configuration error")
	require.Contains(t, p.output(), `starter: OUTFLOW_RELAY_SOURCE="kafka": want poll`)
}

// TestRelaySourceLogDrainsOutboxEventsFirst: a database switching to the
// log holds a backlog in outbox_events, and an order whose first event is
// there and whose second is in the log. The starter with
// OUTFLOW_RELAY_SOURCE=log publishes the backlog with the poll relay, says
// so, and reads the log only once it is drained: the order's two workflows
// start in sequence and every event is started exactly once.
func TestRelaySourceLogDrainsOutboxEventsFirst(t *testing.T) {
	t.Parallel()
	pool, url := testdb.New(t)
	tq := "src-log-" + uuid.NewString()[:8]
	backlog := enqueueOrders(t, pool, 40)
	orderID := uuid.NewString()
	first := testdb.Enqueue(t, pool, orderCreated(t, orderID))[0]
	cancelled, err := outbox.NewEvent(orders.AggregateType, orderID, orders.EventOrderCancelled, orders.OrderCancelledVersion,
		orders.OrderCancelled{OrderID: orderID, CreatedEventID: first.ID.String()})
	require.NoError(t, err)
	second := testdb.EnqueueWith(t, pool, outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true}), cancelled)[0]
	require.Equal(t, first.Sequence+1, second.Sequence, "one order's sequence across both tables")

	p := startStarter(t, url, tq, "OUTFLOW_RELAY_SOURCE=log", "OUTFLOW_RELAY_IN_FLIGHT=4")
	p.waitLog(t, "log source: draining outbox_events with the poll relay")
	waitPublished(t, pool, append(backlog, first), 60*time.Second)
	p.waitLog(t, "log source: reading the log")
	requireWorkflowCount(t, tq, len(backlog)+2)
	p.terminate(t)
	out := p.output()
	require.Less(t, strings.Index(out, "log source: outbox_events drained"), strings.Index(out, "log source: reading the log"))
	require.Contains(t, out, "source=log")

	requireStartedBefore(t, first, second, "the order's event in outbox_events starts before its later one in the log")
}

// requireStartedBefore fails unless first's workflow started before
// second's.
func requireStartedBefore(t *testing.T, first, second outbox.Event, msg string) {
	t.Helper()
	ctx := context.Background()
	a, err := temporal.Client().DescribeWorkflow(ctx, first.ID.String(), "")
	require.NoError(t, err)
	b, err := temporal.Client().DescribeWorkflow(ctx, second.ID.String(), "")
	require.NoError(t, err)
	require.True(t, a.RawResponse.WorkflowExecutionInfo.StartTime.AsTime().Before(b.RawResponse.WorkflowExecutionInfo.StartTime.AsTime()), msg)
}

// TestRelaySourceLogNamesQuarantinedEvents: a quarantined event left in
// outbox_events does not hold the log back: the starter names it in an
// error line and reads the log.
func TestRelaySourceLogNamesQuarantinedEvents(t *testing.T) {
	t.Parallel()
	pool, url := testdb.New(t)
	tq := "src-logq-" + uuid.NewString()[:8]
	stuck := testdb.Enqueue(t, pool, orderCreated(t, uuid.NewString()))[0]
	outboxtest.Force(t, pool, outboxtest.Match{ID: stuck.ID}, outboxtest.SetQuarantined(time.Minute, "test poison"))
	logged := testdb.EnqueueWith(t, pool, outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true}), orderCreated(t, uuid.NewString()))[0]

	p := startStarter(t, url, tq, "OUTFLOW_RELAY_SOURCE=log")
	p.waitLog(t, "log source: reading the log")
	requireWorkflowCount(t, tq, 1)
	require.Contains(t, p.output(), "quarantined events are left in outbox_events")
	require.Contains(t, p.output(), stuck.ID.String())
	require.NotContains(t, p.output(), "log source: draining outbox_events")
	_, err := temporal.Client().DescribeWorkflow(context.Background(), logged.ID.String(), "")
	require.NoError(t, err)

	// The operator retries it under the log source: the poll relay beside
	// the log's reader publishes it, without a restart.
	_, err = outboxops.Retry(context.Background(), pool, stuck.ID)
	require.NoError(t, err)
	waitPublished(t, pool, []outbox.Event{stuck}, 30*time.Second)
	requireWorkflowCount(t, tq, 2)
	p.terminate(t)
	require.NotContains(t, p.output(), "written to outbox_events after this database switched", "a retried event is no producer's mistake")
}

// TestRelaySourceLogSweepsLateOutboxEvents: an event written to
// outbox_events after the switch (a producer left on the poll source) is
// not stranded: the poll relay beside the log's reader publishes it and the
// starter names it in an error line.
func TestRelaySourceLogSweepsLateOutboxEvents(t *testing.T) {
	t.Parallel()
	pool, url := testdb.New(t)
	tq := "src-loglate-" + uuid.NewString()[:8]
	p := startStarter(t, url, tq, "OUTFLOW_RELAY_SOURCE=log")
	p.waitLog(t, "log source: reading the log")
	logged := testdb.EnqueueWith(t, pool, outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true}), orderCreated(t, uuid.NewString()))[0]
	late := testdb.EnqueueAsRead(t, pool, "poll", orderCreated(t, uuid.NewString()))[0]
	waitPublished(t, pool, []outbox.Event{late}, 30*time.Second)
	requireWorkflowCount(t, tq, 2)
	p.terminate(t)
	var lines []string
	for _, l := range strings.Split(p.output(), "\n") {
		if strings.Contains(l, "written to outbox_events after this database switched to the log") {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 1, "one late event, named once")
	require.Contains(t, lines[0], late.ID.String())
	_, err := temporal.Client().DescribeWorkflow(context.Background(), logged.ID.String(), "")
	require.NoError(t, err, "the log's own event is started by the log's reader")
}

// TestRelaySourcePollDrainsTheLogFirst: a database switching back from the
// log holds an order whose first event is in the log, unpublished, and
// whose second is in outbox_events. The poll starter publishes the log
// with a log relay first and reads outbox_events only once the log is
// drained, so the order's workflows start in sequence; the log relay stays
// beside it and publishes an event written to the log later, naming it in
// an error line. A database whose log was never written runs no log relay.
func TestRelaySourcePollDrainsTheLogFirst(t *testing.T) {
	t.Parallel()
	pool, url := testdb.New(t)
	tq := "src-leave-" + uuid.NewString()[:8]
	logged := outbox.NewEnqueuer(outbox.EnqueueConfig{Log: true})
	orderID := uuid.NewString()
	first := testdb.EnqueueWith(t, pool, logged, orderCreated(t, orderID))[0]
	cancelled, err := outbox.NewEvent(orders.AggregateType, orderID, orders.EventOrderCancelled, orders.OrderCancelledVersion,
		orders.OrderCancelled{OrderID: orderID, CreatedEventID: first.ID.String()})
	require.NoError(t, err)
	second := testdb.Enqueue(t, pool, cancelled)[0]
	require.Equal(t, first.Sequence+1, second.Sequence, "one order's sequence across both tables")

	p := startStarter(t, url, tq, "OUTFLOW_RELAY_IN_FLIGHT=4")
	p.waitLog(t, "log source left: draining the log with the log relay before reading outbox_events")
	p.waitLog(t, "log source left: reading outbox_events, the log relay beside it")
	waitPublished(t, pool, []outbox.Event{second}, 30*time.Second)
	requireWorkflowCount(t, tq, 2)
	requireStartedBefore(t, first, second, "the order's event in the log starts before its later one in outbox_events")

	late := testdb.EnqueueWith(t, pool, logged, orderCreated(t, uuid.NewString()))[0]
	requireWorkflowCount(t, tq, 3)
	p.terminate(t)
	out := p.output()
	require.Less(t, strings.Index(out, "log source left: the log drained"), strings.Index(out, "log source left: reading outbox_events"))
	require.Contains(t, out, "outbox log relay: took partitions")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "written to the log after this database switched back") {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 1, "one late event, named once")
	require.Contains(t, lines[0], late.ID.String())

	// A database that never used the log: no log relay, no drain.
	pool2, url2 := testdb.New(t)
	tq2 := "src-nolog-" + uuid.NewString()[:8]
	plain := testdb.Enqueue(t, pool2, orderCreated(t, uuid.NewString()))[0]
	p2 := startStarter(t, url2, tq2)
	waitPublished(t, pool2, []outbox.Event{plain}, 30*time.Second)
	p2.terminate(t)
	require.NotContains(t, p2.output(), "log source left")
	require.NotContains(t, p2.output(), "outbox log relay")
}

// TestRelaySourceCDCNeedsLogicalWAL: on a server with wal_level=replica (the
// shared test server) the cdc source refuses to start and says what to set.
func TestRelaySourceCDCNeedsLogicalWAL(t *testing.T) {
	t.Parallel()
	_, url := testdb.New(t)
	p := startStarter(t, url, "src-"+uuid.NewString()[:8], "OUTFLOW_RELAY_SOURCE=cdc")
	require.Error(t, p.wait(t, 30*time.Second))
	require.Contains(t, p.output(), "wal_level=logical")
}

// TestCDCCrashAfterPublishThenRestart: the cdc starter dies of SIGKILL after
// Temporal accepted a start and before the mark and the slot's confirmation.
// Restarted, it resumes from the slot (and its backfill), the duplicate start
// is absorbed, every row is marked and each event has exactly one workflow.
func TestCDCCrashAfterPublishThenRestart(t *testing.T) {
	t.Parallel()
	pool, url := testdb.NewLogical(t)
	tq := "cdc-crash-" + uuid.NewString()[:8]
	slot := "cdc_crash_" + uuid.NewString()[:8]
	crashed := startStarter(t, url, tq, "OUTFLOW_RELAY_SOURCE=cdc", "OUTFLOW_CDC_SLOT="+slot,
		"OUTFLOW_FAILPOINTS=cdc.after_publish=crash")
	// Events committed before the slot exists are the backfill's (the
	// polling path, without this failpoint): enqueue once the stream runs.
	crashed.waitLog(t, "outbox cdc: streaming")
	events := enqueueOrders(t, pool, 4)
	requireKilled(t, crashed)
	require.Less(t, countPublished(t, pool, events), len(events), "the crash came before the marks")

	requireRecoveredOnce(t, pool, url, tq, events, "OUTFLOW_RELAY_SOURCE=cdc", "OUTFLOW_CDC_SLOT="+slot)
}
