package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

var (
	temporal   *devserver.Server
	starterExe string
)

// TestMain builds the real starter binary once and shares one dev server.
func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "outflow-starter-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		starterExe = filepath.Join(dir, "starter")
		build := exec.Command("go", "build", "-o", starterExe, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the starter:", err)
			return 1
		}
		defer testdb.StopLogical()
		return devserver.RunTests(m, devserver.Options{}, &temporal)
	}())
}

// TestCrashAfterPublishThenRestart: the starter dies of SIGKILL after
// Temporal accepted a start and before published_at is committed (after the
// acknowledgement, or inside the mark transaction before COMMIT). Restarted,
// it publishes the event again, Temporal's "already started" is taken as the
// acknowledgement, every row is marked, and each event still has exactly one
// workflow.
func TestCrashAfterPublishThenRestart(t *testing.T) {
	t.Parallel()
	for _, fp := range []string{"relay.after_publish", "relay.before_mark_commit"} {
		t.Run(fp, func(t *testing.T) {
			t.Parallel()
			pool, url := testdb.New(t)
			tq := "crash-publish-" + uuid.NewString()[:8]
			events := enqueueOrders(t, pool, 4)

			// A short lease: the restarted relay waits for the dead one's to expire.
			crashed := startStarter(t, url, tq, "OUTFLOW_FAILPOINTS="+fp+"=crash", "OUTFLOW_RELAY_LEASE=2s")
			requireKilled(t, crashed)

			var started int
			for _, e := range events {
				_, err := temporal.Client().DescribeWorkflow(context.Background(), e.ID.String(), "")
				if err == nil {
					started++
				} else {
					require.ErrorAs(t, err, new(*serviceerror.NotFound))
				}
			}
			require.Positive(t, started, "the crash came after Temporal accepted a start")
			require.Zero(t, countPublished(t, pool, events), "nothing was marked: the acknowledgements died with the process")

			requireRecoveredOnce(t, pool, url, tq, events, "OUTFLOW_RELAY_LEASE=2s", "OUTFLOW_RELAY_POLL=200ms")
		})
	}
}

// TestCrashAfterClaimLeaseExpires: the starter dies of SIGKILL holding the
// leases of a claimed batch. A second starter takes the expired leases over
// (counted by outbox_expired_leases_total on its /metrics), publishes every
// event, and stops gracefully on SIGTERM.
func TestCrashAfterClaimLeaseExpires(t *testing.T) {
	t.Parallel()
	pool, url := testdb.New(t)
	tq := "crash-claim-" + uuid.NewString()[:8]
	events := enqueueOrders(t, pool, 3)

	crashed := startStarter(t, url, tq, "OUTFLOW_FAILPOINTS=relay.after_claim=crash", "OUTFLOW_RELAY_LEASE=2s")
	requireKilled(t, crashed)
	deadOwner := crashed.owner(t)
	for _, e := range events {
		row := outboxtest.RequireEnqueued(t, pool, outboxtest.Match{ID: e.ID})
		require.Equal(t, deadOwner, row.ClaimedBy, "the dead relay still holds the lease")
		require.NotNil(t, row.ClaimUntil)
		require.Equal(t, 1, row.Attempts)
	}
	require.Zero(t, countPublished(t, pool, events))

	port, err := ports.Free()
	require.NoError(t, err)
	metricsAddr := "127.0.0.1:" + strconv.Itoa(port)
	next := startStarter(t, url, tq, "OUTFLOW_RELAY_LEASE=2s", "OUTFLOW_RELAY_POLL=200ms", "METRICS_ADDR="+metricsAddr)
	waitPublished(t, pool, events, 60*time.Second)
	owner := next.owner(t)
	require.NotEqual(t, deadOwner, owner)
	for _, e := range events {
		require.Equal(t, owner, outboxtest.RequireEnqueued(t, pool, outboxtest.Match{ID: e.ID}).ClaimedBy,
			"published by the relay that took the lease over")
	}
	// The relay adds to outbox_published_total only once its mark's COMMIT
	// has returned, so the rows can read published a moment before the
	// counter does: wait for it. The take-overs were counted before any
	// publish began.
	metrics := waitMetric(t, metricsAddr, "outbox_published_total", float64(len(events)), 10*time.Second)
	require.Equal(t, float64(len(events)), metricValue(t, metrics, "outbox_expired_leases_total"))
	require.Contains(t, metrics, "outbox_handoff_latency_seconds_bucket")
	next.terminate(t)
	requireWorkflowCount(t, tq, len(events))
}

func TestMalformedFailpointsStopTheStarter(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	p := startStarter(t, url, "unused", "OUTFLOW_FAILPOINTS=relay.after_publsh=crash")
	err := p.wait(t, 30*time.Second)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode(), "a configuration error")
	require.Contains(t, p.output(), "unknown failpoint")
}

// TestMalformedSettingsStopTheStarter: an address the Temporal client would
// accept and never reach, beside another bad setting, stops the starter
// before it starts: exit status 2, one plain line per setting (no log
// record, nothing escaped), and never "relay started".
func TestMalformedSettingsStopTheStarter(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	p := startStarter(t, url, "unused", "TEMPORAL_ADDRESS=not a host:port:x", "OUTFLOW_RELAY_BATCH=0")
	err := p.wait(t, 30*time.Second)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode())
	out := p.output()
	require.Contains(t, out, "starter: OUTFLOW_RELAY_BATCH=\"0\": want a positive integer\n")
	require.Contains(t, out, "starter: TEMPORAL_ADDRESS=\"not a host:port:x\"")
	require.Contains(t, out, "want host:port")
	require.NotContains(t, out, "relay started")
	require.NotContains(t, out, "level=", "plain lines, not log records")
}

// process is a running starter binary with its combined output captured.
type process struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func startStarter(t *testing.T, dbURL, taskQueue string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(starterExe)
	cmd.Env = append(cleanEnv(),
		"DATABASE_URL="+dbURL,
		"TEMPORAL_ADDRESS="+temporal.Address(),
		"TEMPORAL_NAMESPACE=default",
		"OUTFLOW_TASK_QUEUE="+taskQueue,
	)
	cmd.Env = append(cmd.Env, env...)
	p := &process{cmd: cmd, done: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	require.NoError(t, cmd.Start())
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		p.err = cmd.Wait()
		_ = pw.Close()
		// Wait returns once the scanner took the last bytes from the
		// pipe, not once it appended them: done waits for the scanner,
		// so output() after done holds the process's last line.
		<-scanned
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("starter output:\n%s", p.output())
		}
	})
	return p
}

// cleanEnv is this process's environment without the variables the test
// sets itself.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "OUTFLOW_") && name != "OUTFLOW_TEMPORAL_CLI" || strings.HasPrefix(name, "TEMPORAL_") ||
			name == "DATABASE_URL" || name == "METRICS_ADDR" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *process) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(within):
		t.Fatalf("starter still running after %s; output:\n%s", within, p.output())
		return nil
	}
}

var ownerRE = regexp.MustCompile(`msg="relay started" owner=(\S+)`)

// owner waits for the start-up line and returns the relay's owner.
func (p *process) owner(t *testing.T) string {
	t.Helper()
	var owner string
	require.Eventually(t, func() bool {
		m := ownerRE.FindStringSubmatch(p.output())
		if m != nil {
			owner = m[1]
		}
		return m != nil
	}, 30*time.Second, 20*time.Millisecond, "no `relay started` line")
	return owner
}

// waitLog waits until the starter's output holds line.
func (p *process) waitLog(t *testing.T, line string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(p.output(), line) },
		30*time.Second, 20*time.Millisecond, "no %q line in the starter's output", line)
}

// terminate sends SIGTERM and requires a clean exit (graceful shutdown).
func (p *process) terminate(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, p.wait(t, 30*time.Second), "graceful shutdown exits 0")
	require.Contains(t, p.output(), "relay stopped")
}

func requireKilled(t *testing.T, p *process) {
	t.Helper()
	err := p.wait(t, 60*time.Second)
	require.Error(t, err)
	status, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, status.Signaled() && status.Signal() == syscall.SIGKILL, "want death by SIGKILL, got %v; output:\n%s", err, p.output())
	require.Contains(t, p.output(), "crashing (SIGKILL)")
}

// requireRecoveredOnce starts a clean starter with env, waits until every
// event is marked published, stops it gracefully, and requires exactly one
// workflow per event.
func requireRecoveredOnce(t *testing.T, pool *pgxpool.Pool, url, tq string, events []outbox.Event, env ...string) {
	t.Helper()
	clean := startStarter(t, url, tq, env...)
	waitPublished(t, pool, events, 60*time.Second)
	clean.terminate(t)
	for _, e := range events {
		_, err := temporal.Client().DescribeWorkflow(context.Background(), e.ID.String(), "")
		require.NoError(t, err)
	}
	requireWorkflowCount(t, tq, len(events))
}

func enqueueOrders(t *testing.T, pool *pgxpool.Pool, n int) []outbox.Event {
	t.Helper()
	var events []outbox.Event
	for range n {
		events = append(events, testdb.Enqueue(t, pool, orderCreated(t, uuid.NewString()))...)
	}
	return events
}

// orderCreated is a new order's OrderCreated event, as the order app's
// routes start it.
func orderCreated(t *testing.T, orderID string) outbox.Event {
	t.Helper()
	e, err := outbox.NewEvent(orders.AggregateType, orderID, orders.EventOrderCreated, orders.OrderCreatedVersion, orders.OrderCreated{
		OrderID: orderID, CustomerEmail: "ada@example.com", Currency: "usd", PaymentMethod: "pm_card_visa", Amount: 1250,
		Items: []orders.Item{{SKU: "SKU-1", Quantity: 1, UnitAmount: 1250}},
	})
	require.NoError(t, err)
	return e
}

// countPublished is how many of events are marked published.
func countPublished(t *testing.T, pool *pgxpool.Pool, events []outbox.Event) int {
	t.Helper()
	return published(outboxtest.Events(t, pool, outboxtest.Match{}), events)
}

// waitPublished waits until every one of events is marked published.
func waitPublished(t *testing.T, pool *pgxpool.Pool, events []outbox.Event, within time.Duration) {
	t.Helper()
	outboxtest.WaitFor(t, pool, outboxtest.Match{}, within, func(rows []outboxtest.Event) bool {
		return published(rows, events) == len(events)
	}, "every event published")
}

// published counts the events of want that rows shows published.
func published(rows []outboxtest.Event, want []outbox.Event) int {
	wanted := map[uuid.UUID]bool{}
	for _, e := range want {
		wanted[e.ID] = true
	}
	n := 0
	for _, r := range rows {
		if wanted[r.ID] && r.PublishedAt != nil {
			n++
		}
	}
	return n
}

// requireWorkflowCount waits until visibility shows exactly want workflows
// on tq: one per event, no second run.
func requireWorkflowCount(t *testing.T, tq string, want int) {
	t.Helper()
	var got int64
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := temporal.Client().CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: fmt.Sprintf("TaskQueue = %q", tq)})
		got = resp.GetCount()
		return err == nil && got == int64(want)
	}, 30*time.Second, 100*time.Millisecond, "workflows on %s: want %d, last count %d", tq, want, got)
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return string(body)
}

// waitMetric scrapes addr until the metric name reads want, and returns
// that scrape.
func waitMetric(t *testing.T, addr, name string, want float64, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		metrics := scrape(t, addr)
		if got := metricValue(t, metrics, name); got == want || time.Now().After(deadline) {
			require.Equal(t, want, got, "%s after %s", name, within)
			return metrics
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func metricValue(t *testing.T, metrics, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			require.NoError(t, err)
			return f
		}
	}
	t.Fatalf("metric %s not found in:\n%s", name, metrics)
	return 0
}
