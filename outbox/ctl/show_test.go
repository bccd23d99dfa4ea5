package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
)

// ctlIn runs outboxctl against b's database with the Temporal client's
// settings read from environ.
func (b *testBundle) ctlIn(t *testing.T, environ []string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := runIn(b.Ctx, append(args, "--database-url", b.URL), &out, &errb, environ)
	return result{Code: code, Stdout: out.String(), Stderr: errb.String()}
}

// unreachableTemporal is an address nothing listens on.
func unreachableTemporal(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// longError is a last_error of several lines, longer than list shows.
var longError = "temporalpub: start OrderCreatedWorkflow: rpc error: code = InvalidArgument\n" +
	"\tdetail: " + strings.Repeat("the payload is not what the workflow takes; ", 8) + "\n" +
	"\tthe end of the error"

// TestListJSON: one JSON array, the columns' names as field names, the
// last error whole; an empty selection is an empty array.
func TestListJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lane := b.Enqueue(t, "o-json", "OrderCreated", "OrderCancelled")
	b.Quarantine(t, lane[0].ID, longError)

	r := b.OK(t, "list", "--aggregate", "o-json", "--json")
	var events []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &events), r.Stdout)
	require.Len(t, events, 2)
	first := events[0]
	require.Equal(t, lane[0].ID.String(), first["event_id"])
	require.Equal(t, "order", first["aggregate_type"])
	require.Equal(t, "o-json", first["aggregate_id"])
	require.EqualValues(t, 1, first["aggregate_sequence"])
	require.Equal(t, "OrderCreated", first["event_type"])
	require.Equal(t, "quarantined", first["state"])
	require.Equal(t, longError, first["last_error"], "whole, not truncated")
	require.Contains(t, first, "occurred_at")
	require.Contains(t, first, "quarantined_at")
	require.Equal(t, lane[1].ID.String(), events[1]["event_id"])
	require.Equal(t, "blocked", events[1]["state"])
	require.NotContains(t, events[1], "last_error", "no error: no field")

	r = b.OK(t, "list", "--aggregate", "o-none", "--json")
	require.Equal(t, "[]\n", r.Stdout)
}

// TestShowWithoutTemporal: show prints every column of the row, the last
// error whole (every line), and the state; Temporal unreachable, it says
// so and still exits 0, within its timeout.
func TestShowWithoutTemporal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ev := b.Enqueue(t, "o-show", "OrderCreated")[0]
	b.Quarantine(t, ev.ID, longError)
	addr := unreachableTemporal(t)
	environ := []string{"TEMPORAL_ADDRESS=" + addr, "TEMPORAL_NAMESPACE=default"}

	start := time.Now()
	r := b.ctlIn(t, environ, "show", ev.ID.String())
	require.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	require.Less(t, time.Since(start), TemporalTimeout+5*time.Second)
	var cols []string
	rows, err := b.Pool.Query(b.Ctx, `SELECT column_name FROM information_schema.columns WHERE table_name = 'outbox_events' AND table_schema = current_schema() ORDER BY ordinal_position`)
	require.NoError(t, err)
	for rows.Next() {
		var c string
		require.NoError(t, rows.Scan(&c))
		cols = append(cols, c)
	}
	require.NoError(t, rows.Err())
	require.Contains(t, cols, "payload")
	var lines []string // the columns' lines, without continuation lines
	for _, l := range strings.Split(r.Stdout, "\n") {
		if !strings.HasPrefix(l, " ") {
			lines = append(lines, l)
		}
	}
	for i, c := range cols {
		require.True(t, strings.HasPrefix(lines[i], c+" "), "column %d is %s, in the table's order: %q", i, c, lines[i])
	}
	require.Contains(t, r.Stdout, "event_id "+strings.Repeat(" ", len("replay_requested_at")-len("event_id")+1)+ev.ID.String()+"\n")
	require.Contains(t, r.Stdout, `{"order_id":"o-show"}`, "the payload as JSON")
	for _, l := range strings.Split(longError, "\n") {
		require.Contains(t, r.Stdout, strings.TrimLeft(l, "\t"), "every line of last_error")
	}
	require.Regexp(t, `(?m)^state +quarantined$`, r.Stdout)
	require.Regexp(t, `(?m)^published_at +NULL$`, r.Stdout, "NULL, not an empty string")
	require.Contains(t, r.Stdout, "workflow runs: unknown; Temporal at "+addr+" (namespace default) did not answer, the row above is the database's alone:")

	r = b.ctlIn(t, environ, "show", ev.ID.String(), "--json")
	require.Equal(t, 0, r.Code, r.Stderr)
	var got struct {
		Event    map[string]any `json:"event"`
		State    string         `json:"state"`
		Temporal struct {
			Address string           `json:"address"`
			Runs    []map[string]any `json:"workflow_runs"`
			Error   string           `json:"error"`
		} `json:"temporal"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &got), r.Stdout)
	require.Len(t, got.Event, len(cols), "every column")
	require.Equal(t, ev.ID.String(), got.Event["event_id"])
	require.Equal(t, longError, got.Event["last_error"])
	require.Equal(t, map[string]any{"order_id": "o-show"}, got.Event["payload"])
	require.Equal(t, "quarantined", got.State)
	require.Equal(t, addr, got.Temporal.Address)
	require.Empty(t, got.Temporal.Runs)
	require.Contains(t, got.Temporal.Error, "Temporal is unreachable")

	r = b.ctlIn(t, environ, "show", ev.ID.String(), "--temporal=false")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "workflow runs: not asked (--temporal=false)")
}

// TestShowRefusals: an unknown event fails (1), a malformed id or
// TEMPORAL_ADDRESS is a usage error (2), before the database is read.
func TestShowRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.ctlIn(t, []string{"TEMPORAL_ADDRESS=" + unreachableTemporal(t)}, "show", "0193a1b2-0000-7000-8000-000000000000", "--temporal=false")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "no event 0193a1b2-0000-7000-8000-000000000000 in the outbox")
	r = b.Ctl(t, "show", "not-an-id")
	require.Equal(t, 2, r.Code)
	require.Contains(t, r.Stderr, "is not a UUID")
	r = b.ctlIn(t, []string{"TEMPORAL_ADDRESS=not a host:port:x"}, "show", "0193a1b2-0000-7000-8000-000000000000")
	require.Equal(t, 2, r.Code)
	require.Contains(t, r.Stderr, `TEMPORAL_ADDRESS="not a host:port:x"`)
}

// TestShowWorkflowRuns: with Temporal reachable, show lists every run of
// the workflow whose id is the event id: one terminated, one running.
func TestShowWorkflowRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(b.Ctx, 2*time.Minute)
	defer cancel()
	srv, err := devserver.New(ctx, devserver.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })

	ev := b.Enqueue(t, "o-runs", "OrderCreated")[0]
	b.Force(t, ev.ID, outboxtest.SetPublished(0))
	c := srv.Client()
	id := ev.ID.String()
	// No worker polls this task queue: the runs stay as started.
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: "outboxctl-show-test"}
	first, err := c.ExecuteWorkflow(ctx, opts, "OrderCreatedWorkflow", map[string]string{"order_id": "o-runs"})
	require.NoError(t, err)
	require.NoError(t, c.TerminateWorkflow(ctx, id, first.GetRunID(), "the test starts a second run"))
	second, err := c.ExecuteWorkflow(ctx, opts, "OrderCreatedWorkflow", map[string]string{"order_id": "o-runs"})
	require.NoError(t, err)
	// Visibility trails the start by a moment.
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: "WorkflowId = '" + id + "'"})
		return err == nil && len(resp.GetExecutions()) == 2 && resp.GetExecutions()[0].GetStatus() != 0 && resp.GetExecutions()[1].GetStatus() != 0
	}, 30*time.Second, 100*time.Millisecond)

	environ := []string{"TEMPORAL_ADDRESS=" + srv.Address(), "TEMPORAL_NAMESPACE=default"}
	r := b.ctlIn(t, environ, "show", id)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Regexp(t, `(?m)^state +published$`, r.Stdout)
	require.Contains(t, r.Stdout, "workflow runs (Temporal at "+srv.Address()+", namespace default, workflow id = event id):")
	require.Regexp(t, `(?m)^  `+first.GetRunID()+` +OrderCreatedWorkflow +Terminated +\S+ +\S+ +outboxctl-show-test +\d+$`, r.Stdout)
	require.Regexp(t, `(?m)^  `+second.GetRunID()+` +OrderCreatedWorkflow +Running +\S+ +- +outboxctl-show-test +\d+$`, r.Stdout)

	r = b.ctlIn(t, environ, "show", id, "--json")
	require.Equal(t, 0, r.Code, r.Stderr)
	var got shownJSON
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &got), r.Stdout)
	require.Empty(t, got.Temporal.Error)
	runs := map[string]string{}
	for _, run := range got.Temporal.Runs {
		require.Equal(t, id, run.WorkflowID)
		runs[run.RunID] = run.Status
	}
	require.Equal(t, map[string]string{first.GetRunID(): "Terminated", second.GetRunID(): "Running"}, runs)
}

// shownJSON reads show --json back.
type shownJSON struct {
	Temporal struct {
		Runs []struct {
			WorkflowID string `json:"workflow_id"`
			RunID      string `json:"run_id"`
			Status     string `json:"status"`
		} `json:"workflow_runs"`
		Error string `json:"error"`
	} `json:"temporal"`
}

// TestPasswordsAreNeverPrinted: the password of a connection string stays
// out of what outboxctl prints, however the connection fails. (Help masks
// DATABASE_URL's: internal/cli's TestEveryBinaryAnswersHelpAndVersion.)
func TestPasswordsAreNeverPrinted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, url := range []string{
		"postgres://app:s3cret@127.0.0.1:notaport/outflow",
		"postgres://app:s3cret@" + unreachableTemporal(t) + "/outflow?sslmode=disable",
		"host=127.0.0.1 port=1 user=app password=s3cret dbname=outflow",
	} {
		for _, cmd := range []string{"status", "migrate", "list"} {
			var out, errb bytes.Buffer
			code := run(ctx, []string{cmd, "--database-url", url}, &out, &errb)
			require.Equal(t, 1, code, "%s", errb.String())
			require.Contains(t, errb.String(), "database:")
			require.NotContains(t, out.String()+errb.String(), "s3cret", "outboxctl %s on %s", cmd, url)
		}
	}
}
