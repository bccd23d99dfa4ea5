package invoices

import (
	"encoding/json"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/outflow/outflow/outbox/temporalpub"
)

// InvoiceWorkflow posts an issued invoice to the ledger. The relay starts
// it once per InvoiceIssued event, with the event's envelope as its input.
// It returns whether its delivery was the ledger's first.
func InvoiceWorkflow(ctx workflow.Context, in temporalpub.EventInput) (bool, error) {
	var issued Issued
	// Decoding JSON is deterministic; workflowcheck flags it only because
	// encoding/json reaches reflection and the runtime's allocator.
	err := json.Unmarshal(in.Payload, &issued) //workflowcheck:ignore
	if err != nil {
		return false, temporal.NewNonRetryableApplicationError("unreadable InvoiceIssued payload", "BadPayload", err)
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 10},
	})
	var a *Activities
	var posted bool
	entry := LedgerEntry{EventID: in.EventID, InvoiceID: issued.InvoiceID, AmountCents: issued.AmountCents}
	err = workflow.ExecuteActivity(ctx, a.PostToLedger, entry).Get(ctx, &posted)
	return posted, err
}

// Register registers InvoiceWorkflow and the activities on a worker of
// TaskQueue.
func Register(w worker.Registry, a *Activities) {
	w.RegisterWorkflow(InvoiceWorkflow)
	w.RegisterActivity(a)
}
