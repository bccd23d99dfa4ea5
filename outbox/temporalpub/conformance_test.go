package temporalpub_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/conformance/sinktest"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// blobLimit is the dev server's blob limit (limit.blobSize.error, 2 MiB by
// default): the largest start input or signal Temporal takes.
const blobLimit = 2 << 20

// TestSinkConformance: the Temporal publisher passes the sink suite as a
// start route (the effect: a workflow whose ID is the event's) and as a
// signal route (the effect: the target workflow handled the event, through
// eventsignal), against a dev server of its own that the outage stops and
// starts again on the same file and port.
func TestSinkConformance(t *testing.T) {
	t.Parallel()
	srv := startStoppable(t)
	c, err := client.Dial(client.Options{HostPort: srv.srv.Address(), Logger: log.NewStructuredLogger(quietLogger())})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	t.Run("start", func(t *testing.T) {
		pub := newPublisher(t, c, temporalpub.Config{TaskQueue: taskQueue(t), Logger: quietLogger(), Routes: temporalpub.Routes{
			"SinkTestEvent": {Workflow: "SinkTestWorkflow"}, // no worker: a start only has to be accepted
		}})
		sinktest.Run(t, sinktest.Sink{
			Publisher: func(*testing.T) outbox.Publisher { return pub },
			Effects: func(ctx context.Context, e outbox.Event) (int, error) {
				resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q", e.ID)})
				return int(resp.GetCount()), err
			},
			Refused: func(t *testing.T) outbox.Event {
				e, err := outbox.NewEvent("sinktest", uuid.NewString(), "NoSuchEvent", 1, map[string]string{})
				require.NoError(t, err)
				e.ID, e.OccurredAt = uuid.New(), time.Now()
				return e
			},
			MaxPayload: blobLimit,
			Outage:     srv.outage,
		})
	})

	t.Run("signal", func(t *testing.T) {
		tq := taskQueue(t)
		w := worker.New(c, tq, worker.Options{})
		w.RegisterWorkflowWithOptions(signalSink, workflow.RegisterOptions{Name: sinkWorkflow})
		require.NoError(t, w.Start())
		t.Cleanup(w.Stop)
		pub := newPublisher(t, c, temporalpub.Config{TaskQueue: tq, Logger: quietLogger(), Routes: temporalpub.Routes{
			sinkEvent: {Workflow: sinkWorkflow, Signal: sinkSignal, WorkflowID: sinkID},
		}})
		sinktest.Run(t, sinktest.Sink{
			Publisher:     func(*testing.T) outbox.Publisher { return pub },
			AggregateType: "stock",
			EventType:     sinkEvent,
			Effects: func(ctx context.Context, e outbox.Event) (int, error) {
				v, err := c.QueryWorkflow(ctx, sinkID(e), "", "status")
				if errors.As(err, new(*serviceerror.NotFound)) {
					return 0, nil // no target: nothing was delivered
				}
				if err != nil {
					return 0, err
				}
				var st sinkStatus
				if err := v.Get(&st); err != nil {
					return 0, err
				}
				return countOf(st.Handled, e.ID.String()), nil
			},
			// A late event for a target that closed: a signal never runs a
			// closed workflow again, and the route has no ClosedWorkflow.
			Refused: func(t *testing.T) outbox.Event {
				closer := stockEvent(t, uuid.NewString(), "close")
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				require.NoError(t, pub.Publish(ctx, closer))
				require.Eventually(t, func() bool {
					desc, err := c.DescribeWorkflow(ctx, sinkID(closer), "")
					return err == nil && desc.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
				}, 20*time.Second, 50*time.Millisecond, "the target closes")
				return stockEvent(t, closer.AggregateID, "late")
			},
			MaxPayload: blobLimit,
			Outage:     srv.outage,
		})
	})
}

// countOf is how many times s holds v.
func countOf(s []string, v string) int {
	n := 0
	for i := slices.Index(s, v); i >= 0; i = slices.Index(s, v) {
		n++
		s = s[i+1:]
	}
	return n
}

// stoppable is a persisted dev server a test stops and starts again on the
// same file and port.
type stoppable struct {
	opts devserver.Options
	srv  *devserver.Server
}

// startStoppable starts a persisted dev server, stopped when t ends.
func startStoppable(t *testing.T) *stoppable {
	t.Helper()
	port, err := ports.Free()
	require.NoError(t, err)
	s := &stoppable{opts: devserver.Options{DBFile: filepath.Join(t.TempDir(), "temporal.db"), Port: port}}
	s.up(t)
	t.Cleanup(func() {
		if err := s.srv.Stop(); err != nil {
			t.Logf("devserver: stop: %v", err)
		}
	})
	return s
}

func (s *stoppable) up(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.New(ctx, s.opts)
	require.NoError(t, err)
	s.srv = srv
}

// outage stops the server (the sink's outage) and returns what starts it
// again on its state and port.
func (s *stoppable) outage(t *testing.T) (back func()) {
	require.NoError(t, s.srv.Stop())
	return func() { s.up(t) }
}
