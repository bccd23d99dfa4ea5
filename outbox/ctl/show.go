package ctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/outflow/outflow/outbox/outboxops"
)

// TemporalTimeout bounds show's questions to Temporal: an unreachable
// Temporal delays the answer by at most this.
const TemporalTimeout = 5 * time.Second

// shown is what `show --json` prints: stable field names, the columns under
// their own names.
type shown struct {
	// Event is every column of the outbox row, by column name, in the
	// table's order (payload as JSON, times as RFC 3339).
	Event orderedRow `json:"event"`
	// State is outboxops.EventInfo's state, derived at the database's clock;
	// empty when it could not be derived (see StateError).
	State      outboxops.EventState `json:"state,omitempty"`
	StateError string               `json:"state_error,omitempty"`
	// Temporal says where the workflow runs were asked for.
	Temporal temporalAnswer `json:"temporal"`
}

// temporalAnswer is the event's workflow runs (workflow ID = event id), or
// why Temporal could not say.
type temporalAnswer struct {
	Address   string        `json:"address,omitempty"`
	Namespace string        `json:"namespace,omitempty"`
	Runs      []workflowRun `json:"workflow_runs"`
	// Error is set when Temporal was not asked or did not answer.
	Error string `json:"error,omitempty"`
}

// workflowRun is one run of the event's workflow.
type workflowRun struct {
	WorkflowID string     `json:"workflow_id"`
	RunID      string     `json:"run_id"`
	Type       string     `json:"workflow_type"`
	Status     string     `json:"status"`
	TaskQueue  string     `json:"task_queue"`
	StartTime  time.Time  `json:"start_time"`
	CloseTime  *time.Time `json:"close_time,omitempty"`
	History    int64      `json:"history_length"`
}

// runShow prints one event whole: every column of its row (the last error
// unabridged), its state, and the runs of its workflow from Temporal, or
// why Temporal could not say (the row is shown all the same).
func runShow(ctx context.Context, env *Env, args []string) error {
	fs := NewFlagSet(env, "show", "show EVENT_ID [--json] [--temporal=false]")
	asJSON := fs.Bool("json", false, "print one JSON object: event (every column), state, temporal (address, namespace, workflow_runs, error)")
	askTemporal := fs.Bool("temporal", true, "ask Temporal (TEMPORAL_* variables) for the event's workflow runs")
	pos, err := Parse(env, fs, args)
	if err != nil {
		return err
	}
	id, err := eventIDArg(fs, pos)
	if err != nil {
		return err
	}
	var topts client.Options
	if *askTemporal {
		// A malformed TEMPORAL_* setting is refused before anything is read.
		if topts, err = env.TemporalOptions(); err != nil {
			return err
		}
	}
	pool, err := OpenDB(ctx, env)
	if err != nil {
		return err
	}
	defer pool.Close()

	// An event of outbox_events, or of the log source, shown with its
	// place in the log and its order's hold (outboxops.Show).
	d, err := outboxops.Show(ctx, pool, id)
	if errors.Is(err, outboxops.ErrEventNotFound) {
		return fmt.Errorf("no event %s in the outbox, nor in the log (find event ids with `outboxctl list`)", id)
	}
	if err != nil {
		return err
	}
	out := shown{State: d.State, StateError: d.StateError}
	if out.Event, err = parseRow(string(d.Row)); err != nil {
		return fmt.Errorf("reading event %s: %w", id, err)
	}
	if *askTemporal {
		out.Temporal = workflowRuns(ctx, env, topts, id)
	} else {
		out.Temporal = temporalAnswer{Error: "not asked (--temporal=false)"}
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	return writeShown(env.Stdout, out)
}

// workflowRuns asks Temporal for the runs of workflow id; an unreachable
// Temporal is an answer too (Error), never a failure of show.
func workflowRuns(ctx context.Context, env *Env, o client.Options, id uuid.UUID) temporalAnswer {
	a := temporalAnswer{Address: o.HostPort, Namespace: o.Namespace, Runs: []workflowRun{}}
	if env.Logger != nil {
		o.Logger = tlog.NewStructuredLogger(env.Logger.With("component", "temporal-client"))
	}
	tctx, cancel := context.WithTimeout(ctx, TemporalTimeout)
	defer cancel()
	c, err := DialTemporal(tctx, o)
	if err != nil {
		a.Error = fmt.Sprintf("Temporal is unreachable: %v", err)
		return a
	}
	defer c.Close()
	req := &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: o.Namespace,
		Query:     fmt.Sprintf("WorkflowId = '%s'", id),
	}
	for {
		resp, err := c.ListWorkflow(tctx, req)
		if err != nil {
			a.Error = fmt.Sprintf("Temporal did not list the workflow's runs: %v", err)
			return a
		}
		for _, e := range resp.GetExecutions() {
			r := workflowRun{
				WorkflowID: e.GetExecution().GetWorkflowId(),
				RunID:      e.GetExecution().GetRunId(),
				Type:       e.GetType().GetName(),
				Status:     e.GetStatus().String(), // Running, Completed, Failed, ...
				TaskQueue:  e.GetTaskQueue(),
				StartTime:  e.GetStartTime().AsTime(),
				History:    e.GetHistoryLength(),
			}
			if e.GetCloseTime() != nil {
				t := e.GetCloseTime().AsTime()
				r.CloseTime = &t
			}
			a.Runs = append(a.Runs, r)
		}
		if len(resp.GetNextPageToken()) == 0 {
			return a
		}
		req.NextPageToken = resp.GetNextPageToken()
	}
}

// writeShown prints the event as aligned "column  value" lines, then its
// workflow runs.
func writeShown(w io.Writer, s shown) error {
	width := len("state")
	for _, col := range s.Event {
		width = max(width, len(col.Name))
	}
	pad := "\n" + strings.Repeat(" ", width+2)
	for _, col := range s.Event {
		// A multi-line value (a stack trace in last_error) stays in its
		// column: continuation lines are indented, nothing is cut.
		fmt.Fprintf(w, "%-*s  %s\n", width, col.Name, strings.ReplaceAll(formatValue(col.Value), "\n", pad))
	}
	state := string(s.State)
	if state == "" {
		state = "unknown: " + s.StateError
	}
	fmt.Fprintf(w, "%-*s  %s\n", width, "state", state)
	t := s.Temporal
	switch {
	case t.Address == "":
		fmt.Fprintf(w, "\nworkflow runs: %s\n", t.Error)
		return nil
	case t.Error != "":
		fmt.Fprintf(w, "\nworkflow runs: unknown; Temporal at %s (namespace %s) did not answer, the row above is the database's alone:\n  %s\n", t.Address, t.Namespace, t.Error)
		return nil
	case len(t.Runs) == 0:
		fmt.Fprintf(w, "\nworkflow runs: none in Temporal at %s (namespace %s): not started yet, or closed longer ago than the namespace's retention\n", t.Address, t.Namespace)
		return nil
	}
	fmt.Fprintf(w, "\nworkflow runs (Temporal at %s, namespace %s, workflow id = event id):\n", t.Address, t.Namespace)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  RUN_ID\tTYPE\tSTATUS\tSTARTED\tCLOSED\tTASK_QUEUE\tHISTORY")
	for _, r := range t.Runs {
		closed := "-"
		if r.CloseTime != nil {
			closed = r.CloseTime.UTC().Format(time.RFC3339Nano)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%d\n", r.RunID, r.Type, r.Status, r.StartTime.UTC().Format(time.RFC3339Nano), closed, r.TaskQueue, r.History)
	}
	return tw.Flush()
}

// formatValue renders a column's JSON value: strings as they are, null as
// NULL, everything else (numbers, the payload) as compact JSON.
func formatValue(v json.RawMessage) string {
	if string(v) == "null" { // before the string case, which takes null as ""
		return "NULL"
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return string(v)
	}
	return b.String()
}

// column is one column of a row: its name and its value as JSON.
type column struct {
	Name  string
	Value json.RawMessage
}

// orderedRow is a row's columns in the table's order; as JSON an object.
type orderedRow []column

// parseRow reads row_to_json's object, keeping the columns' order.
func parseRow(raw string) (orderedRow, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object, got %.40q", raw)
	}
	var row orderedRow
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		row = append(row, column{Name: name, Value: v})
	}
	return row, nil
}

// MarshalJSON writes the columns as one object, in order.
func (r orderedRow) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range r {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(c.Name)
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteByte(':')
		b.Write(c.Value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
