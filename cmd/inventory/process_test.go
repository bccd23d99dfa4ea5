package main

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// TestCrashAfterCommitThenRetry runs the real cmd/inventory binary as a
// child process with OUTFLOW_FAILPOINTS=inventory.after_commit=crash: it
// dies by SIGKILL after committing the reservation, before answering. The
// client's retry with the same key, against the restarted binary, replays
// the committed answer: one reservation, one event, one signal handled by
// the saga (which Signal-With-Start started), nothing written twice.
func TestCrashAfterCommitThenRetry(t *testing.T) {
	t.Parallel()
	bin, db, env := processSetup(t)
	orderID, saga := uuid.NewString(), "saga-"+uuid.NewString()
	body := reserveBody(orderID, saga, item("SKU-A", 2))

	p := startInventory(t, bin, append(env, "OUTFLOW_FAILPOINTS=inventory.after_commit=crash")...)
	_, err := call(t, http.MethodPost, "http://"+p.Addr+"/reservations", "crash-"+orderID, body)
	require.Error(t, err, "the process dies after COMMIT, before the answer: the client sees a connection error")
	p.RequireKilled(t, "inventory.after_commit")
	committed := rows{Reservations: 1, Items: 1, Requests: 1, Inbox: 1, Events: 1}
	require.Equal(t, committed, countRows(t, db), "the reservation, its inbox row, answer and event committed together")
	require.Equal(t, stockLevel{Available: 3, Reserved: 2}, stockOf(t, db, "SKU-A"))
	ev := outboxtest.RequireEnqueued(t, db, outboxtest.Match{AggregateType: AggregateType, AggregateID: orderID})
	require.Equal(t, EventReserved, ev.Type)

	p = startInventory(t, bin, append(env, "METRICS_ADDR=127.0.0.1:0")...)
	r := mustCall(t, http.MethodPost, "http://"+p.Addr+"/reservations", "crash-"+orderID, body)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	require.True(t, r.replayed, "the retry gets the committed answer")
	out, eventID := r.outcome(t)
	require.Equal(t, OutcomeReserved, out.Outcome)
	require.Equal(t, ev.ID.String(), eventID, "the answer names the one event")
	require.Equal(t, committed, countRows(t, db), "the retry wrote nothing")
	require.Equal(t, stockLevel{Available: 3, Reserved: 2}, stockOf(t, db, "SKU-A"), "reserved once")

	outboxtest.WaitFor(t, db, outboxtest.Match{}, time.Minute, outboxtest.AllPublished)
	st := waitSaga(t, saga, 1)
	require.Equal(t, handled{EventID: eventID, EventType: EventReserved, Outcome: out}, st.Handled[0])
	time.Sleep(time.Second)
	st = waitSaga(t, saga, 1)
	require.Zero(t, st.Duplicates)

	health := mustCall(t, http.MethodGet, "http://"+p.Addr+"/healthz", "", "")
	require.Equal(t, http.StatusOK, health.status)
	m := metricsAt.FindStringSubmatch(p.Log())
	require.NotNil(t, m, "the binary logs its metrics address")
	metrics := mustCall(t, http.MethodGet, "http://"+m[1]+"/metrics", "", "")
	require.Equal(t, http.StatusOK, metrics.status)
	require.Contains(t, string(metrics.body), "\noutbox_pending_events ", "the relay's metrics")
	require.Contains(t, string(metrics.body), "inbox_duplicates_total", "the inbox's counter")
	p.RequireStopped(t)
	require.Contains(t, p.Log(), "msg=stopped")
}

// TestRelayCrashAfterSignalIsHandledOnce: the binary's relay dies by
// SIGKILL after Temporal accepted the StockReserved signal, before the
// event was marked published (relay.after_publish, the ACK gap). The
// restarted binary's relay signals it again once the lease ran out; the
// saga's eventsignal receiver drops the second delivery: one event handled,
// one duplicate counted, the event published once.
func TestRelayCrashAfterSignalIsHandledOnce(t *testing.T) {
	t.Parallel()
	bin, db, env := processSetup(t)
	orderID, saga := uuid.NewString(), "saga-"+uuid.NewString()
	body := reserveBody(orderID, saga, item("SKU-A", 1))

	p := startInventory(t, bin, append(env, "OUTFLOW_FAILPOINTS=relay.after_publish=crash")...)
	// The answer races the relay's crash; a lost one is retried below.
	first, firstErr := call(t, http.MethodPost, "http://"+p.Addr+"/reservations", "ack-"+orderID, body)
	p.RequireKilled(t, "relay.after_publish")
	st := waitSaga(t, saga, 1)
	ev := outboxtest.RequireEnqueued(t, db, outboxtest.Match{AggregateType: AggregateType, AggregateID: orderID})
	require.Nil(t, ev.PublishedAt, "the relay died before the mark")
	require.Equal(t, ev.ID.String(), st.Handled[0].EventID)

	p = startInventory(t, bin, env...)
	if firstErr != nil {
		first = mustCall(t, http.MethodPost, "http://"+p.Addr+"/reservations", "ack-"+orderID, body)
	}
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
	outboxtest.WaitFor(t, db, outboxtest.Match{}, 2*time.Minute, outboxtest.AllPublished, "the restarted relay takes the event over once its lease ran out")
	require.Eventually(t, func() bool { return waitSaga(t, saga, 1).Duplicates == 1 }, 30*time.Second, 100*time.Millisecond,
		"the second signal reached the saga and was dropped")
	require.Equal(t, rows{Reservations: 1, Items: 1, Requests: 1, Inbox: 1, Events: 1}, countRows(t, db))
	require.Equal(t, stockLevel{Available: 4, Reserved: 1}, stockOf(t, db, "SKU-A"))
}

// processSetup is what the process tests start from: the binary built, a
// database holding 5 of SKU-A, a saga worker, and the binary's environment
// for them.
func processSetup(t *testing.T) (bin string, db *pgxpool.Pool, env []string) {
	t.Helper()
	bin = proc.Build(t, "inventory", "github.com/outflow/outflow/cmd/inventory")
	db, url := newDB(t)
	tq := startSagaWorker(t)
	_, err := db.Exec(t.Context(), `INSERT INTO inventory_stock (sku, available) VALUES ('SKU-A', 5)`)
	require.NoError(t, err)
	return bin, db, []string{"INVENTORY_DATABASE_URL=" + url, "TEMPORAL_ADDRESS=" + temporal.Address(),
		"INVENTORY_SAGA_WORKFLOW=" + sagaWorkflow, "INVENTORY_SAGA_TASK_QUEUE=" + tq}
}

var metricsAt = regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)

// startInventory starts bin with INVENTORY_ADDR=127.0.0.1:0 and env, and
// waits for its "listening" line.
func startInventory(t *testing.T, bin string, env ...string) *proc.Server {
	t.Helper()
	return proc.StartServer(t, "inventory", bin, 60*time.Second,
		append([]string{"INVENTORY_ADDR=127.0.0.1:0", "OUTFLOW_FAILPOINTS=", "METRICS_ADDR="}, env...)...)
}

// TestLogSourceSignalsTheSaga: on a database whose recorded source is the
// log (`outboxctl source set log`, here after the binary migrated it) the
// binary writes its events to the append-only log, none to outbox_events,
// and its relay, which followed the source to the log, delivers them to
// the saga in order, each once.
func TestLogSourceSignalsTheSaga(t *testing.T) {
	t.Parallel()
	bin, db, env := processSetup(t)
	orderID, saga := uuid.NewString(), "saga-"+uuid.NewString()
	p := startInventory(t, bin, env...)
	_, err := outboxops.SetSource(t.Context(), db, outboxops.SourceLog, "test", "")
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, p.WaitLog(wctx, "log source: reading the log"), "the relay followed the source to the log")

	r := mustCall(t, http.MethodPost, "http://"+p.Addr+"/reservations", "log-"+orderID, reserveBody(orderID, saga, item("SKU-A", 2)))
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	_, reserved := r.outcome(t)
	rel := mustCall(t, http.MethodPost, "http://"+p.Addr+"/reservations/"+orderID+"/release", "logrel-"+orderID, `{"workflow_id":"`+saga+`"}`)
	require.Equal(t, http.StatusOK, rel.status, "%s", rel.body)
	_, released := rel.outcome(t)

	st := waitSaga(t, saga, 2)
	require.Equal(t, []string{reserved, released}, []string{st.Handled[0].EventID, st.Handled[1].EventID}, "in the order's sequence")
	require.Equal(t, rows{Reservations: 1, Items: 1, Requests: 2, Inbox: 2, Events: 0}, countRows(t, db), "nothing in outbox_events")
	logged, err := outbox.AggregateEvents(t.Context(), db, AggregateType, orderID)
	require.NoError(t, err)
	require.Len(t, logged, 2, "both events, in the log")
	time.Sleep(time.Second)
	require.Zero(t, waitSaga(t, saga, 2).Duplicates)
	p.RequireStopped(t)
	require.Contains(t, p.Log(), "log source: reading the log")
}

// TestRetentionKeepsTheInventorysDatabase: the binary keeps its own
// database's retention, as a starter keeps its: a published event and an
// inbox row older than OUTFLOW_RETENTION go; the request they answered,
// sent again after they went, gets its stored answer and changes nothing;
// and, in log mode, the log's ranges are made ahead of its sequence, so an
// enqueue never runs out of them.
func TestRetentionKeepsTheInventorysDatabase(t *testing.T) {
	t.Parallel()
	bin, db, env := processSetup(t)
	env = append(env, "OUTFLOW_RETENTION=24h", "OUTFLOW_CLEANUP_INTERVAL=200ms")
	orderID, saga := uuid.NewString(), "saga-"+uuid.NewString()
	p := startInventory(t, bin, env...)
	url, key, body := "http://"+p.Addr+"/reservations", "ret-"+orderID, reserveBody(orderID, saga, item("SKU-A", 2))
	first := mustCall(t, http.MethodPost, url, key, body)
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
	waitSaga(t, saga, 1)
	outboxtest.WaitFor(t, db, outboxtest.Match{}, 30*time.Second, outboxtest.AllPublished)
	require.Equal(t, rows{Reservations: 1, Items: 1, Requests: 1, Inbox: 1, Events: 1}, countRows(t, db))

	// Ten days later, as far as the rows tell.
	outboxtest.Force(t, db, outboxtest.Match{}, outboxtest.SetPublished(10*24*time.Hour))
	_, err := db.Exec(t.Context(), `UPDATE processed_events SET processed_at = now() - interval '10 days'`)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		r := countRows(t, db)
		return r.Events == 0 && r.Inbox == 0
	}, 20*time.Second, 100*time.Millisecond, "the old event and inbox row are cleaned up")

	again := mustCall(t, http.MethodPost, url, key, body)
	require.Equal(t, first.status, again.status, "%s", again.body)
	require.True(t, again.replayed, "the stored answer, replayed")
	require.JSONEq(t, string(first.body), string(again.body))
	require.Equal(t, rows{Reservations: 1, Items: 1, Requests: 1}, countRows(t, db), "the replay wrote nothing")
	require.Equal(t, stockLevel{Available: 3, Reserved: 2}, stockOf(t, db, "SKU-A"), "reserved once")
	p.RequireStopped(t)

	_, err = db.Exec(t.Context(), `SELECT setval('outbox_log_pos', 25000000)`)
	require.NoError(t, err)
	_, err = outboxops.SetSource(t.Context(), db, outboxops.SourceLog, "test", "")
	require.NoError(t, err)
	p = startInventory(t, bin, env...)
	require.Eventually(t, func() bool {
		r, err := outboxops.LogRangesOf(t.Context(), db)
		return err == nil && r.Ahead == 2
	}, 20*time.Second, 100*time.Millisecond, "two ranges ahead of the log's sequence")
	p.RequireStopped(t)
}
