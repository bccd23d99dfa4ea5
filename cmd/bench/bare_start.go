package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	batchpb "go.temporal.io/api/batch/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/outflow/outflow/handoff"
	"github.com/outflow/outflow/internal/bench/benchdb"
	"github.com/outflow/outflow/internal/routes"
	"github.com/outflow/outflow/orders"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// startRequest is the ExecuteWorkflow request of the bare baseline. It is the
// request temporalpub.Publisher sends for a first delivery of an
// OrderCreated event (same options, search attribute, summary and details,
// memo and input: [temporalpub.InputOf], the delivery in both), so that bare
// and relay differ only by the relay. TestBareStartIsThePublishersRequest
// compares the two as the server recorded them.
func (b *bench) startRequest() (client.StartWorkflowOptions, handoff.EventInput, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return client.StartWorkflowOptions{}, handoff.EventInput{}, err
	}
	order := id.String()
	payload, err := json.Marshal(orders.OrderCreated{
		OrderID: order, CustomerEmail: "bench@example.com", Currency: "usd",
		PaymentMethod: "pm_card_visa", Amount: 2500, Items: benchdb.Order().Items,
	})
	if err != nil {
		return client.StartWorkflowOptions{}, handoff.EventInput{}, err
	}
	e := outbox.Event{
		ID: id, Type: orders.EventOrderCreated, AggregateType: orders.AggregateType, AggregateID: order,
		Sequence: 1, SchemaVersion: orders.OrderCreatedVersion, Payload: payload, OccurredAt: time.Now(),
	}
	summary, details := routes.Orders()[orders.EventOrderCreated].Describe(e)
	in := temporalpub.InputOf(e)
	opts := client.StartWorkflowOptions{
		ID:                                       id.String(),
		TaskQueue:                                b.taskQueue,
		WorkflowIDReusePolicy:                    temporalpub.ReusePolicy(e),
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			routes.OrderIDKey.ValueSet(order)),
		StaticSummary: summary,
		StaticDetails: details,
		Memo: map[string]any{
			"aggregate_type": orders.AggregateType, "aggregate_id": order, "aggregate_sequence": int64(1),
			"schema_version": orders.OrderCreatedVersion, "event_type": orders.EventOrderCreated,
			"delivery": in.Delivery,
		},
	}
	return opts, in, nil
}

// startOne is one bare ExecuteWorkflow round trip.
func (b *bench) startOne(ctx context.Context) error {
	opts, in, err := b.startRequest()
	if err != nil {
		return err
	}
	if _, err := b.tc.ExecuteWorkflow(ctx, opts, handoff.OrderCreatedWorkflowName, in); err != nil {
		return fmt.Errorf("ExecuteWorkflow: %w", err)
	}
	return nil
}

// bareStarts starts n workflows from `workers` goroutines, each in a plain
// ExecuteWorkflow loop, and returns how long that took.
func (b *bench) bareStarts(ctx context.Context, n, workers int) (time.Duration, error) {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := b.startOne(ctx); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), firstErr
}

// terminateWorkflows ends every workflow the run started, with one batch
// operation over its task queue, so a shared Temporal server does not keep
// thousands of open executions. Best effort: a failure is only reported.
func (b *bench) terminateWorkflows() {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err := b.tc.WorkflowService().StartBatchOperation(ctx, &workflowservice.StartBatchOperationRequest{
		Namespace:       b.namespace,
		VisibilityQuery: fmt.Sprintf("TaskQueue = %q AND ExecutionStatus = 'Running'", b.taskQueue),
		JobId:           b.taskQueue + "-cleanup",
		Reason:          "outflow bench finished",
		Operation: &workflowservice.StartBatchOperationRequest_TerminationOperation{
			TerminationOperation: &batchpb.BatchOperationTermination{Identity: "outflow-bench"},
		},
	})
	if err != nil {
		b.progress("warning: could not terminate the bench's workflows on task queue %s: %v", b.taskQueue, err)
		return
	}
	b.progress("terminating the bench's workflows on task queue %s (batch job %s-cleanup)", b.taskQueue, b.taskQueue)
}
