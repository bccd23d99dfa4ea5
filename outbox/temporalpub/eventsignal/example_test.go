package eventsignal_test

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/outbox/temporalpub"
	"github.com/outflow/outflow/outbox/temporalpub/eventsignal"
)

// ReservationInput is the input of a workflow that a signal route
// (temporalpub.Route{Signal: "stock-event", WorkflowID: ...}) targets. A
// Signal-With-Start starts it with none: the zero value, an empty Events.
type ReservationInput struct {
	Events eventsignal.State `json:"events"`
}

// ReservationWorkflow handles each stock event once, however often the
// relay delivers it, and continues as new when its history grows long,
// carrying what its Receiver has seen.
func ReservationWorkflow(ctx workflow.Context, in ReservationInput) error {
	// First thing: a Signal-With-Start's event is already in the channel.
	events := eventsignal.New[temporalpub.EventInput](ctx, "stock-event", in.Events, eventsignal.Options{})
	handle := func(ev temporalpub.EventInput) {
		workflow.GetLogger(ctx).Info("stock event", "event_id", ev.EventID, "type", ev.EventType)
	}
	for {
		ev, ok := events.Receive(ctx)
		if !ok {
			return ctx.Err()
		}
		handle(ev)
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			events.Drain(handle) // signals still buffered would end with this run
			return workflow.NewContinueAsNewError(ctx, ReservationWorkflow, ReservationInput{Events: events.State()})
		}
	}
}

// A relay's re-delivery dropped: three signals, the second a duplicate of
// the first, reach a workflow that takes two events (run here in the SDK's
// test environment; temporalpub's tests run ReservationWorkflow's kind on a
// dev server).
func ExampleNew() {
	takeTwo := func(ctx workflow.Context) ([]string, error) {
		events := eventsignal.New[temporalpub.EventInput](ctx, "stock-event", eventsignal.State{}, eventsignal.Options{})
		var got []string
		for len(got) < 2 {
			ev, ok := events.Receive(ctx)
			if !ok {
				return got, ctx.Err()
			}
			got = append(got, ev.EventType+" "+ev.EventID)
		}
		return got, nil
	}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(takeTwo, workflow.RegisterOptions{Name: "TakeTwo"})
	for i, ev := range []temporalpub.EventInput{
		{EventID: "e-1", EventType: "StockReserved"},
		{EventID: "e-1", EventType: "StockReserved"}, // the relay lost its mark and sent it again
		{EventID: "e-2", EventType: "StockReleased"},
	} {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow("stock-event", ev) }, time.Duration(i+1)*time.Second)
	}
	env.ExecuteWorkflow("TakeTwo")
	var got []string
	if err := env.GetWorkflowResult(&got); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Join(got, "\n"))
	// Output:
	// StockReserved e-1
	// StockReleased e-2
}
