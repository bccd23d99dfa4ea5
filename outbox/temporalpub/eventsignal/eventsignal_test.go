package eventsignal_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/outbox/temporalpub/eventsignal"
)

// event is a signal payload keyed by its ID, as temporalpub.EventInput is.
type event struct {
	ID   string `json:"id"`
	Note string `json:"note"`
}

func (e event) DedupKey() string { return e.ID }

const signal = "event"

type input struct {
	State eventsignal.State
	Limit int
	// Want is how many new events to take before returning.
	Want int
}

type result struct {
	Handled    []event
	State      eventsignal.State
	Duplicates int
	Cancelled  bool
}

// receiveN takes Want new events (each handed out once) and returns them
// with the receiver's state; a cancellation ends it early.
func receiveN(ctx workflow.Context, in input) (result, error) {
	r := eventsignal.New[event](ctx, signal, in.State, eventsignal.Options{Limit: in.Limit})
	var res result
	for len(res.Handled) < in.Want {
		ev, ok := r.Receive(ctx)
		if !ok {
			res.Cancelled = true
			break
		}
		res.Handled = append(res.Handled, ev)
	}
	res.State, res.Duplicates = r.State(), r.Duplicates()
	return res, nil
}

func run(t *testing.T, in input, signals []event, cancel bool) result {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(receiveN)
	for i, ev := range signals {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(signal, ev) }, time.Duration(i+1)*time.Second)
	}
	if cancel {
		env.RegisterDelayedCallback(env.CancelWorkflow, time.Duration(len(signals)+1)*time.Second)
	}
	env.ExecuteWorkflow(receiveN, in)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res result
	require.NoError(t, env.GetWorkflowResult(&res))
	return res
}

func ids(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// TestDuplicatesAreDroppedInArrivalOrder: a second delivery of an event ID
// is dropped (the first one's payload is what the workflow saw), counted,
// and the others come in arrival order.
func TestDuplicatesAreDroppedInArrivalOrder(t *testing.T) {
	t.Parallel()
	res := run(t, input{Want: 3}, []event{{"a", "first"}, {"a", "again"}, {"b", ""}, {"a", ""}, {"c", ""}}, false)
	require.Equal(t, []string{"a", "b", "c"}, ids(res.Handled))
	require.Equal(t, "first", res.Handled[0].Note)
	require.Equal(t, 2, res.Duplicates)
	require.Equal(t, eventsignal.State{Seen: []string{"a", "b", "c"}, Duplicates: 2}, res.State)
}

// TestStateCarriesTheSeenSet: a run given the previous run's State drops the
// events that run handed out, and keeps counting duplicates.
func TestStateCarriesTheSeenSet(t *testing.T) {
	t.Parallel()
	first := run(t, input{Want: 2}, []event{{"a", ""}, {"b", ""}}, false)
	next := run(t, input{Want: 1, State: first.State}, []event{{"b", ""}, {"a", ""}, {"c", ""}}, false)
	require.Equal(t, []string{"c"}, ids(next.Handled))
	require.Equal(t, eventsignal.State{Seen: []string{"a", "b", "c"}, Duplicates: 2}, next.State)
}

// TestTheSetIsBounded: beyond Limit the oldest keys are forgotten (and a
// re-delivery of one is handed out again: the documented price of the
// bound); a State longer than the limit keeps its newest keys.
func TestTheSetIsBounded(t *testing.T) {
	t.Parallel()
	res := run(t, input{Want: 4, Limit: 2}, []event{{"a", ""}, {"b", ""}, {"c", ""}, {"b", ""}, {"a", ""}}, false)
	require.Equal(t, []string{"a", "b", "c", "a"}, ids(res.Handled))
	require.Equal(t, eventsignal.State{Seen: []string{"c", "a"}, Duplicates: 1}, res.State)

	trimmed := run(t, input{Want: 1, Limit: 2, State: eventsignal.State{Seen: []string{"x", "y", "z"}}},
		[]event{{"z", ""}, {"y", ""}, {"x", ""}}, false)
	require.Equal(t, []string{"x"}, ids(trimmed.Handled), "x was the oldest, beyond the limit")
	require.Equal(t, 2, trimmed.Duplicates)
}

// TestReceiveEndsOnCancel: a cancelled workflow's Receive returns ok false
// instead of blocking.
func TestReceiveEndsOnCancel(t *testing.T) {
	t.Parallel()
	res := run(t, input{Want: 5}, []event{{"a", ""}, {"a", ""}}, true)
	require.True(t, res.Cancelled)
	require.Equal(t, []string{"a"}, ids(res.Handled))
	require.Equal(t, 1, res.Duplicates)
}

type drained struct {
	Drained    []string
	N          int
	MoreAsync  bool
	SeenB      bool
	SeenOther  bool
	Selected   []string
	Duplicates int
}

// TestDrainMarkAndSelector: Drain hands out what is buffered without
// blocking, duplicates dropped; a marked key is dropped like one received;
// AddToSelector calls its handler for new events only.
func TestDrainMarkAndSelector(t *testing.T) {
	t.Parallel()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	wf := func(ctx workflow.Context) (drained, error) {
		r := eventsignal.New[event](ctx, signal, eventsignal.State{}, eventsignal.Options{})
		r.Mark("start")
		if err := workflow.Sleep(ctx, time.Minute); err != nil { // the signals are buffered meanwhile
			return drained{}, err
		}
		var d drained
		d.N = r.Drain(func(e event) { d.Drained = append(d.Drained, e.ID) })
		_, d.MoreAsync = r.ReceiveAsync()
		d.SeenB, d.SeenOther = r.Seen("b"), r.Seen("zzz")
		sel := workflow.NewSelector(ctx)
		r.AddToSelector(sel, func(e event) { d.Selected = append(d.Selected, e.ID) })
		for range 3 { // "b" again, "c", "c" again: one handler call
			sel.Select(ctx)
		}
		d.Duplicates = r.Duplicates()
		return d, nil
	}
	env.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: "drain"})
	for _, id := range []string{"start", "a", "b", "a"} {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(signal, event{ID: id}) }, time.Second)
	}
	for i, id := range []string{"b", "c", "c"} {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(signal, event{ID: id}) }, time.Duration(2+i)*time.Minute)
	}
	env.ExecuteWorkflow("drain")
	require.NoError(t, env.GetWorkflowError())
	var d drained
	require.NoError(t, env.GetWorkflowResult(&d))
	require.Equal(t, drained{Drained: []string{"a", "b"}, N: 2, SeenB: true, Selected: []string{"c"}, Duplicates: 4}, d)
}
