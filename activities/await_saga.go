package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/handoff"
)

// AwaitSagaInput names the saga to wait for.
type AwaitSagaInput struct {
	// WorkflowID is the saga's workflow ID (the OrderCreated event id).
	WorkflowID string `json:"workflow_id"`
}

// AwaitSagaResult is the awaited saga's result, or why there is none.
type AwaitSagaResult struct {
	// Found: the saga completed and Result is its result.
	Found  bool               `json:"found"`
	Result handoff.SagaResult `json:"result"`
	// Problem says why there is no result: the saga failed, was terminated,
	// timed out, or no longer exists (retention). The caller must then find
	// the truth at the provider.
	Problem string `json:"problem,omitempty"`
}

// AwaitSaga waits for the saga's workflow to close and returns its result.
// It heartbeats while it waits, so a lost worker is noticed within the
// heartbeat timeout; if the saga is still running when the attempt's time is
// nearly up it returns a retryable SagaStillRunning error rather than being
// timed out mid-call.
func (a *Activities) AwaitSaga(ctx context.Context, in AwaitSagaInput) (AwaitSagaResult, error) {
	if a.Temporal == nil {
		return AwaitSagaResult{}, errors.New("activities: no Temporal client configured for AwaitSaga")
	}
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if dl, ok := ctx.Deadline(); ok {
		var c2 context.CancelFunc
		waitCtx, c2 = context.WithDeadline(waitCtx, dl.Add(-5*time.Second))
		defer c2()
	}
	if activity.IsActivity(ctx) {
		interval := activity.GetInfo(ctx).HeartbeatTimeout / 3
		if interval <= 0 {
			interval = 10 * time.Second
		}
		go func() {
			t := time.NewTicker(interval)
			defer t.Stop()
			for {
				select {
				case <-waitCtx.Done():
					return
				case <-t.C:
					activity.RecordHeartbeat(ctx, "waiting for saga "+in.WorkflowID)
				}
			}
		}()
	}

	var res handoff.SagaResult
	err := a.Temporal.GetWorkflow(waitCtx, in.WorkflowID, "").Get(waitCtx, &res)
	if err == nil {
		return AwaitSagaResult{Found: true, Result: res}, nil
	}
	var notFound *serviceerror.NotFound
	var execErr *temporal.WorkflowExecutionError
	switch {
	case errors.As(err, &notFound):
		return AwaitSagaResult{Problem: fmt.Sprintf("saga %s not found (past retention?): %v", in.WorkflowID, err)}, nil
	case errors.As(err, &execErr):
		return AwaitSagaResult{Problem: fmt.Sprintf("saga %s ended without a result: %v", in.WorkflowID, err)}, nil
	case waitCtx.Err() != nil && ctx.Err() == nil:
		return AwaitSagaResult{}, temporal.NewApplicationError(
			fmt.Sprintf("saga %s is still running", in.WorkflowID), ErrTypeSagaStillRunning)
	default:
		return AwaitSagaResult{}, fmt.Errorf("waiting for saga %s: %w", in.WorkflowID, err)
	}
}
