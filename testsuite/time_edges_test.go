package testsuite

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/outflow/outflow/outbox/namedsql"
	"github.com/outflow/outflow/outbox/temporalpub"
	"github.com/outflow/outflow/providersim"
)

//go:embed time_edges.sql
var edgeSQL embed.FS

// The time-edge tests' statements (time_edges.sql), bound to their Go types.
var (
	edgeQueries = namedsql.MustLoad(edgeSQL, "time_edges.sql")

	qAgeOrder        = namedsql.Bind[ageArgs, namedsql.NoRows](edgeQueries, "AgeOrder")
	qAgeEvents       = namedsql.Bind[ageArgs, namedsql.NoRows](edgeQueries, "AgeEvents")
	qLoseMark        = namedsql.Bind[eventIDArgs, namedsql.NoRows](edgeQueries, "LoseMark")
	qForceReplay     = namedsql.Bind[eventIDArgs, namedsql.NoRows](edgeQueries, "ForceReplay")
	qNotify          = namedsql.Bind[namedsql.NoArgs, namedsql.NoRows](edgeQueries, "Notify")
	qEventPublished  = namedsql.Bind[eventIDArgs, bool](edgeQueries, "EventPublished")
	qOrderEventCount = namedsql.Bind[orderEventsArgs, int64](edgeQueries, "OrderEventCount")
	qCancelEventOf   = namedsql.Bind[orderEventsArgs, string](edgeQueries, "CancelEventOf")

	edgeStatements = []namedsql.Info{
		qAgeOrder.Info(), qAgeEvents.Info(), qLoseMark.Info(), qForceReplay.Info(), qNotify.Info(),
		qEventPublished.Info(), qOrderEventCount.Info(), qCancelEventOf.Info(),
	}
)

// ageArgs move order ID and its events Age (an interval) into the past.
type ageArgs struct {
	ID  string `db:"id"`
	Age string `db:"age"`
}

type eventIDArgs struct {
	EventID string `db:"event_id"`
}

type orderEventsArgs struct {
	OrderID string `db:"order_id"`
}

// TestTimeEdges runs the real binaries across the horizons where time, not a
// crash, is the failure: Temporal forgetting a closed workflow, the
// providers forgetting idempotency keys, cleanup forgetting events, and an
// operator's replay and cancel arriving after all of them. Orders are aged by
// moving their timestamps; Temporal forgets by deleting the closed run (what
// its retention does); the providers forget when the simulator's clock moves
// 25 hours ahead.
//
// It runs on a private environment (its own Temporal and simulator): moving
// the simulator's clock would expire the keys of every other test.
func TestTimeEdges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own Temporal dev server")
	}
	env := PrivateEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	retention, err := temporalpub.NamespaceRetention(ctx, env.Client, "default")
	require.NoError(t, err)

	// Defect 2: a payment run terminated before it charged, the order
	// cancelled (nothing to refund), then an operator replays the order's
	// events. The replayed run never got the cancel signal: it must ask the
	// order, and a cancelled order is never charged or confirmed.
	t.Run("replay of a terminated payment run never charges a cancelled order", func(t *testing.T) {
		s := NewStackOn(t, env)
		s.Start("orderapi", "")
		s.Start("starter", "")
		api := s.API()
		o, err := api.Create(ctx, "edge-replay-"+uuid.NewString(), "pm_card_visa")
		require.NoError(t, err)
		waitPublished(ctx, t, s, o.EventID)
		// No worker yet: the run waits at its first task; terminate it.
		require.NoError(t, env.Client.TerminateWorkflow(ctx, o.EventID, "", "test: the payment run dies before charging"))
		s.Start("worker", "")
		require.NoError(t, api.Cancel(ctx, o.OrderID))
		require.NoError(t, WaitStatus(ctx, s, o.OrderID, "cancelled", 2*time.Minute))
		firstRun := runID(ctx, t, env, o.EventID)

		out, err := s.Outboxctl(ctx, "replay", "--from", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339),
			"--to", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "--aggregate", o.OrderID, "--yes")
		require.NoError(t, err, out)
		waitPublished(ctx, t, s, o.EventID)
		// The terminated run allows a new one (ALLOW_DUPLICATE_FAILED_ONLY);
		// wait until it has closed.
		require.Eventually(t, func() bool {
			d, err := env.Client.DescribeWorkflow(ctx, o.EventID, "")
			return err == nil && d.WorkflowExecution.RunID != firstRun &&
				d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		}, time.Minute, 100*time.Millisecond, "the replayed run completes")

		effects := effectsOf(ctx, t, env, o.OrderID)
		require.Zero(t, effects.succeededCharges, "a cancelled order is never charged")
		require.Zero(t, effects.emails["confirmation"], "and never confirmed")
		require.Equal(t, 1, effects.emails["cancellation"])
		require.NoError(t, WaitStatus(ctx, s, o.OrderID, "cancelled", time.Second))
	})

	// Defect 1: an order older than the outbox retention is cancelled after
	// Temporal forgot its payment run and cleanup deleted its events. The
	// cancel finds the charge at the provider, closes the saga's event with
	// the sequence the order row keeps, and refunds.
	t.Run("a late cancel after retention and cleanup refunds", func(t *testing.T) {
		s := NewStackOn(t, env)
		s.Start("orderapi", "")
		s.Start("starter", "")
		s.Start("worker", "")
		api := s.API()
		o, err := api.Create(ctx, "edge-late-cancel-"+uuid.NewString(), "pm_card_visa")
		require.NoError(t, err)
		require.NoError(t, WaitStatus(ctx, s, o.OrderID, "confirmed", 2*time.Minute))
		forgetWorkflow(ctx, t, env, o.EventID)
		age(ctx, t, s, o.OrderID, 8*24*time.Hour)
		out, err := s.Outboxctl(ctx, "cleanup", "--retention", "168h", "--yes")
		require.NoError(t, err, out)
		left, err := qOrderEventCount.Value(ctx, s.Pool, orderEventsArgs{OrderID: o.OrderID})
		require.NoError(t, err)
		require.Zero(t, left, "cleanup deleted the order's events")

		require.NoError(t, api.Cancel(ctx, o.OrderID))
		require.NoError(t, WaitStatus(ctx, s, o.OrderID, "cancelled", 2*time.Minute))
		// The order reads cancelled before the cancellation mail is sent:
		// count the effects once the cancel's workflow has completed.
		cancelEvent, err := qCancelEventOf.Value(ctx, s.Pool, orderEventsArgs{OrderID: o.OrderID})
		require.NoError(t, err)
		waitCompleted(ctx, t, env, cancelEvent)
		effects := effectsOf(ctx, t, env, o.OrderID)
		require.Equal(t, 1, effects.succeededCharges)
		require.Equal(t, 1, effects.refunds, "the charge was refunded, once")
		require.Equal(t, 1, effects.emails["cancellation"])
	})

	// Defect 5: Temporal forgot a confirmed order's payment run and the
	// providers forgot its keys. A re-delivery of its event (a relay's mark
	// lost for longer than the retention) starts a fresh run, which must
	// neither charge nor mail again; a replay behind the horizon is refused
	// by outboxctl, and one already queued is acknowledged without a start.
	t.Run("a forgotten run re-delivered or replayed moves no money and sends no mail", func(t *testing.T) {
		s := NewStackOn(t, env)
		s.Start("orderapi", "")
		starter := s.Start("starter", "")
		s.Start("worker", "")
		api := s.API()
		o, err := api.Create(ctx, "edge-forgotten-"+uuid.NewString(), "pm_card_visa")
		require.NoError(t, err)
		require.NoError(t, WaitStatus(ctx, s, o.OrderID, "confirmed", 2*time.Minute))
		before := effectsOf(ctx, t, env, o.OrderID)
		require.Equal(t, 1, before.succeededCharges)
		require.Equal(t, 1, before.emails["confirmation"])

		forgetWorkflow(ctx, t, env, o.EventID)
		_, err = env.SimClient().Advance(ctx, 25*time.Hour)
		require.NoError(t, err)
		age(ctx, t, s, o.OrderID, retention+time.Hour)

		// The re-delivery: a new run starts (Temporal no longer refuses it).
		_, err = qLoseMark.Exec(ctx, s.Pool, eventIDArgs{EventID: o.EventID})
		require.NoError(t, err)
		_, err = qNotify.Exec(ctx, s.Pool, namedsql.NoArgs{})
		require.NoError(t, err)
		waitPublished(ctx, t, s, o.EventID)
		require.Eventually(t, func() bool {
			d, err := env.Client.DescribeWorkflow(ctx, o.EventID, "")
			return err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
		}, time.Minute, 100*time.Millisecond, "the re-delivered run completes")
		after := effectsOf(ctx, t, env, o.OrderID)
		require.Equal(t, 1, after.succeededCharges, "no second charge under the expired key")
		require.Equal(t, 1, after.emails["confirmation"], "no second confirmation")

		// An operator's replay of the aged event is refused, naming the horizon.
		out, err := s.Outboxctl(ctx, "replay", "--from", time.Now().Add(-retention-2*time.Hour).UTC().Format(time.RFC3339),
			"--to", time.Now().UTC().Format(time.RFC3339), "--aggregate", o.OrderID, "--yes")
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "replay behind the horizon must fail: %s", out)
		require.Contains(t, out, "horizon", out)

		// A replay queued before the horizon passed is acknowledged without a
		// start.
		runBefore := runID(ctx, t, env, o.EventID)
		_, err = qForceReplay.Exec(ctx, s.Pool, eventIDArgs{EventID: o.EventID})
		require.NoError(t, err)
		_, err = qNotify.Exec(ctx, s.Pool, namedsql.NoArgs{})
		require.NoError(t, err)
		waitPublished(ctx, t, s, o.EventID)
		require.NoError(t, starter.WaitLog(ctx, "replay refused"))
		require.Equal(t, runBefore, runID(ctx, t, env, o.EventID), "no new run")
		final := effectsOf(ctx, t, env, o.OrderID)
		require.Equal(t, 1, final.succeededCharges)
		require.Equal(t, 1, final.emails["confirmation"])
	})
}

// orderEffects are one order's effects at the provider simulator.
type orderEffects struct {
	succeededCharges, refunds int
	emails                    map[string]int
}

func effectsOf(ctx context.Context, t *testing.T, env *Env, orderID string) orderEffects {
	t.Helper()
	l, err := env.SimClient().Ledger(ctx)
	require.NoError(t, err)
	return countEffects(l, orderID)
}

func countEffects(l providersim.Ledger, orderID string) orderEffects {
	e := orderEffects{emails: map[string]int{}}
	pis := map[string]bool{}
	for _, pi := range l.PaymentIntents {
		if pi.Metadata["order_id"] == orderID && pi.Status == "succeeded" {
			e.succeededCharges++
			pis[pi.ID] = true
		}
	}
	for _, r := range l.Refunds {
		if pis[r.PaymentIntent] {
			e.refunds++
		}
	}
	for _, m := range l.Emails {
		if m.Tags["order_id"] == orderID {
			e.emails[m.Tags["kind"]]++
		}
	}
	return e
}

// waitPublished waits until the relay has (re)published the event.
func waitPublished(ctx context.Context, t *testing.T, s *Stack, eventID string) {
	t.Helper()
	require.Eventually(t, func() bool {
		ok, err := qEventPublished.Value(ctx, s.Pool, eventIDArgs{EventID: eventID})
		return err == nil && ok
	}, time.Minute, 50*time.Millisecond, "event %s published", eventID)
}

// age moves an order and its events d into the past.
func age(ctx context.Context, t *testing.T, s *Stack, orderID string, d time.Duration) {
	t.Helper()
	iv := fmt.Sprintf("%d milliseconds", d.Milliseconds())
	_, err := qAgeOrder.Exec(ctx, s.Pool, ageArgs{ID: orderID, Age: iv})
	require.NoError(t, err)
	_, err = qAgeEvents.Exec(ctx, s.Pool, ageArgs{ID: orderID, Age: iv})
	require.NoError(t, err)
}

// forgetWorkflow deletes a closed workflow, as Temporal does once the
// namespace retention has passed, and waits until it is gone.
func forgetWorkflow(ctx context.Context, t *testing.T, env *Env, workflowID string) {
	t.Helper()
	_, err := env.Client.WorkflowService().DeleteWorkflowExecution(ctx, &workflowservice.DeleteWorkflowExecutionRequest{
		Namespace:         "default",
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: workflowID},
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := env.Client.DescribeWorkflow(ctx, workflowID, "")
		var nf *serviceerror.NotFound
		return errors.As(err, &nf)
	}, time.Minute, 100*time.Millisecond, "workflow %s forgotten", workflowID)
}

// waitCompleted waits until the workflow's latest run has completed.
func waitCompleted(ctx context.Context, t *testing.T, env *Env, workflowID string) {
	t.Helper()
	require.Eventually(t, func() bool {
		d, err := env.Client.DescribeWorkflow(ctx, workflowID, "")
		return err == nil && d.RawResponse.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	}, time.Minute, 100*time.Millisecond, "workflow %s completes", workflowID)
}

func runID(ctx context.Context, t *testing.T, env *Env, workflowID string) string {
	t.Helper()
	d, err := env.Client.DescribeWorkflow(ctx, workflowID, "")
	require.NoError(t, err)
	return d.WorkflowExecution.RunID
}
