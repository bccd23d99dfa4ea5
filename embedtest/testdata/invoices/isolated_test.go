package invoices_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"example.com/invoices"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/outboxtest"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// TestIssueInItsOwnOutbox: the test gets an outbox of its own
// (outboxtest.NewSchema), so the service's relay running against the same
// database never takes its events; the invoice tables are migrated into
// the same schema. A relay publishing to a recorder gets the event, and the
// workflow runs on the test environment with the input the relay would
// give it (temporalpub.InputOf).
func TestIssueInItsOwnOutbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := outboxtest.NewSchema(t, openDB(t, ctx))
	require.NoError(t, invoices.Migrate(ctx, db))

	rec := &outboxtest.Recorder{}
	outboxtest.RunRelay(t, db, rec, outbox.RelayConfig{})
	inv, ev, err := invoices.Issue(ctx, db, "initech", 4_200)
	require.NoError(t, err)
	got := rec.Wait(t, 1, 30*time.Second)
	require.Equal(t, ev.ID, got[0].ID)

	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *invoices.Activities
	env.RegisterActivity(a)
	env.OnActivity(a.PostToLedger, mock.Anything, invoices.LedgerEntry{EventID: ev.ID.String(), InvoiceID: inv.ID, AmountCents: 4_200}).Return(true, nil)
	env.ExecuteWorkflow(invoices.InvoiceWorkflow, temporalpub.InputOf(got[0]))
	require.NoError(t, env.GetWorkflowError())
	var posted bool
	require.NoError(t, env.GetWorkflowResult(&posted))
	require.True(t, posted)
	env.AssertExpectations(t)
}
