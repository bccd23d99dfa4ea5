package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outflow/outflow/outbox/outboxtest"
)

// TestCrashAfterCommitThenRetry runs the real cmd/inventory binary as a
// child process with OUTFLOW_FAILPOINTS=inventory.after_commit=crash: it
// dies by SIGKILL after committing the reservation, before answering. The
// client's retry with the same key, against the restarted binary, replays
// the committed answer: one reservation, one event, one signal handled by
// the saga (which Signal-With-Start started), nothing written twice.
func TestCrashAfterCommitThenRetry(t *testing.T) {
	t.Parallel()
	bin := buildInventory(t)
	db, url := newDB(t)
	tq := startSagaWorker(t)
	_, err := db.Exec(t.Context(), `INSERT INTO inventory_stock (sku, available) VALUES ('SKU-A', 5)`)
	require.NoError(t, err)
	orderID, saga := uuid.NewString(), "saga-"+uuid.NewString()
	body := reserveBody(orderID, saga, item("SKU-A", 2))
	env := []string{"INVENTORY_DATABASE_URL=" + url, "TEMPORAL_ADDRESS=" + temporal.Address(),
		"INVENTORY_SAGA_WORKFLOW=" + sagaWorkflow, "INVENTORY_SAGA_TASK_QUEUE=" + tq}

	p := startInventory(t, bin, append(env, "OUTFLOW_FAILPOINTS=inventory.after_commit=crash")...)
	_, err = call(t, http.MethodPost, "http://"+p.addr+"/reservations", "crash-"+orderID, body)
	require.Error(t, err, "the process dies after COMMIT, before the answer: the client sees a connection error")
	p.waitKilled(t, "inventory.after_commit")
	committed := rows{Reservations: 1, Items: 1, Requests: 1, Inbox: 1, Events: 1}
	require.Equal(t, committed, countRows(t, db), "the reservation, its inbox row, answer and event committed together")
	require.Equal(t, stockLevel{Available: 3, Reserved: 2}, stockOf(t, db, "SKU-A"))
	ev := outboxtest.RequireEnqueued(t, db, outboxtest.Match{AggregateType: AggregateType, AggregateID: orderID})
	require.Equal(t, EventReserved, ev.Type)

	p = startInventory(t, bin, append(env, "METRICS_ADDR=127.0.0.1:0")...)
	r := mustCall(t, http.MethodPost, "http://"+p.addr+"/reservations", "crash-"+orderID, body)
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

	health := mustCall(t, http.MethodGet, "http://"+p.addr+"/healthz", "", "")
	require.Equal(t, http.StatusOK, health.status)
	m := metricsAt.FindStringSubmatch(p.logs())
	require.NotNil(t, m, "the binary logs its metrics address")
	metrics := mustCall(t, http.MethodGet, "http://"+m[1]+"/metrics", "", "")
	require.Equal(t, http.StatusOK, metrics.status)
	require.Contains(t, string(metrics.body), "\noutbox_pending_events ", "the relay's metrics")
	require.Contains(t, string(metrics.body), "inbox_duplicates_total", "the inbox's counter")
	p.stop(t)
	require.Contains(t, p.logs(), "msg=stopped")
}

// TestRelayCrashAfterSignalIsHandledOnce: the binary's relay dies by
// SIGKILL after Temporal accepted the StockReserved signal, before the
// event was marked published (relay.after_publish, the ACK gap). The
// restarted binary's relay signals it again once the lease ran out; the
// saga's eventsignal receiver drops the second delivery: one event handled,
// one duplicate counted, the event published once.
func TestRelayCrashAfterSignalIsHandledOnce(t *testing.T) {
	t.Parallel()
	bin := buildInventory(t)
	db, url := newDB(t)
	tq := startSagaWorker(t)
	_, err := db.Exec(t.Context(), `INSERT INTO inventory_stock (sku, available) VALUES ('SKU-A', 5)`)
	require.NoError(t, err)
	orderID, saga := uuid.NewString(), "saga-"+uuid.NewString()
	body := reserveBody(orderID, saga, item("SKU-A", 1))
	env := []string{"INVENTORY_DATABASE_URL=" + url, "TEMPORAL_ADDRESS=" + temporal.Address(),
		"INVENTORY_SAGA_WORKFLOW=" + sagaWorkflow, "INVENTORY_SAGA_TASK_QUEUE=" + tq}

	p := startInventory(t, bin, append(env, "OUTFLOW_FAILPOINTS=relay.after_publish=crash")...)
	// The answer races the relay's crash; a lost one is retried below.
	first, firstErr := call(t, http.MethodPost, "http://"+p.addr+"/reservations", "ack-"+orderID, body)
	p.waitKilled(t, "relay.after_publish")
	st := waitSaga(t, saga, 1)
	ev := outboxtest.RequireEnqueued(t, db, outboxtest.Match{AggregateType: AggregateType, AggregateID: orderID})
	require.Nil(t, ev.PublishedAt, "the relay died before the mark")
	require.Equal(t, ev.ID.String(), st.Handled[0].EventID)

	p = startInventory(t, bin, env...)
	if firstErr != nil {
		first = mustCall(t, http.MethodPost, "http://"+p.addr+"/reservations", "ack-"+orderID, body)
	}
	require.Equal(t, http.StatusCreated, first.status, "%s", first.body)
	outboxtest.WaitFor(t, db, outboxtest.Match{}, 2*time.Minute, outboxtest.AllPublished, "the restarted relay takes the event over once its lease ran out")
	require.Eventually(t, func() bool { return waitSaga(t, saga, 1).Duplicates == 1 }, 30*time.Second, 100*time.Millisecond,
		"the second signal reached the saga and was dropped")
	require.Equal(t, rows{Reservations: 1, Items: 1, Requests: 1, Inbox: 1, Events: 1}, countRows(t, db))
	require.Equal(t, stockLevel{Available: 4, Reserved: 1}, stockOf(t, db, "SKU-A"))
}

// buildInventory compiles cmd/inventory into the test's temporary directory.
func buildInventory(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "inventory")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/outflow/outflow/cmd/inventory").CombinedOutput()
	require.NoError(t, err, "go build ./cmd/inventory: %s", out)
	return bin
}

// process is a running inventory binary.
type process struct {
	cmd    *exec.Cmd
	addr   string
	done   chan struct{}
	err    error // cmd.Wait's result, set before done closes
	mu     sync.Mutex
	output bytes.Buffer
}

func (p *process) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

var (
	listening = regexp.MustCompile(`msg=listening addr=(\S+)`)
	metricsAt = regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)
)

// startInventory starts bin with INVENTORY_ADDR=127.0.0.1:0 and env, and
// waits for its "listening" line.
func startInventory(t *testing.T, bin string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), append([]string{"INVENTORY_ADDR=127.0.0.1:0", "OUTFLOW_FAILPOINTS=", "METRICS_ADDR="}, env...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &process{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.output.WriteString(line + "\n")
			p.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("inventory output:\n%s", p.logs())
		}
	})
	select {
	case p.addr = <-addr:
		return p
	case <-p.done:
		t.Fatalf("inventory exited before listening: %v\n%s", p.err, p.logs())
	case <-time.After(60 * time.Second):
		t.Fatalf("inventory did not log its listen address within 60s:\n%s", p.logs())
	}
	return nil
}

// waitKilled waits for the process to die of its own crash failpoint fp.
func (p *process) waitKilled(t *testing.T, fp string) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("inventory did not crash:\n%s", p.logs())
	}
	var exitErr *exec.ExitError
	require.ErrorAs(t, p.err, &exitErr)
	status, ok := exitErr.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, status.Signaled() && status.Signal() == syscall.SIGKILL, "want death by SIGKILL, got %v", p.err)
	require.Contains(t, p.logs(), "failpoint "+fp+": crashing (SIGKILL)")
}

// stop sends SIGTERM and expects a clean exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("inventory did not stop on SIGTERM:\n%s", p.logs())
	}
	require.NoError(t, p.err, p.logs())
}
