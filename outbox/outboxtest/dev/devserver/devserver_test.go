package devserver_test

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
)

// TestRestartKeepsStateAndSearchAttribute: a persisted server registers
// OrderId, and a workflow started before a stop is still there after a start
// on the same file and port.
func TestRestartKeepsStateAndSearchAttribute(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port, err := ports.Free()
	require.NoError(t, err)
	db := filepath.Join(t.TempDir(), "temporal.db")

	first := devserver.Start(t, devserver.Options{DBFile: db, Port: port})
	resp, err := first.Client().OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, resp.GetCustomAttributes()["OrderId"])
	run, err := first.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "persisted", TaskQueue: "devserver-test"}, "AnyWorkflow")
	require.NoError(t, err)
	require.NoError(t, first.Stop())
	require.NoError(t, first.Stop(), "Stop is idempotent")

	second := devserver.Start(t, devserver.Options{DBFile: db, Port: port})
	require.Equal(t, first.Address(), second.Address())
	desc, err := second.Client().DescribeWorkflow(ctx, "persisted", "")
	require.NoError(t, err)
	require.Equal(t, run.GetRunID(), desc.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId())
}

// TestRegisterNamespaceWithoutOrderId: a namespace registered on a running
// server takes workflows at once, with its own retention, and has none of
// the custom search attributes the server gave "default" (OrderId).
func TestRegisterNamespaceWithoutOrderId(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := devserver.Start(t, devserver.Options{})
	require.NoError(t, srv.RegisterNamespace(ctx, "billing", 72*time.Hour))

	c, err := client.Dial(srv.ClientOptions("billing"))
	require.NoError(t, err)
	defer c.Close()
	desc, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "billing"})
	require.NoError(t, err)
	require.Equal(t, 72*time.Hour, desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration())
	attrs, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "billing"})
	require.NoError(t, err)
	require.Empty(t, attrs.GetCustomAttributes())
	def, err := srv.Client().OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	require.Contains(t, def.GetCustomAttributes(), "OrderId")

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "in-billing", TaskQueue: "devserver-test"}, "AnyWorkflow")
	require.NoError(t, err)
	got, err := c.DescribeWorkflow(ctx, "in-billing", "")
	require.NoError(t, err)
	require.Equal(t, run.GetRunID(), got.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId())
	_, err = srv.Client().DescribeWorkflow(ctx, "in-billing", "")
	require.ErrorAs(t, err, new(*serviceerror.NotFound), "not in default")
}

// TestLaunchSupervisedServer: a launched server answers on its address with
// the OrderId search attribute, logs to its file, and restarts on the same
// file and port with its state.
func TestLaunchSupervisedServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	opts := devserver.LaunchOptions{
		Options: devserver.Options{DBFile: filepath.Join(dir, "temporal.db"), LogLevel: "error"},
		LogFile: filepath.Join(dir, "temporal.log"),
	}
	first, err := devserver.Launch(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { first.Stop(10 * time.Second) })
	require.Empty(t, first.UIURL(), "headless")
	c, err := client.Dial(client.Options{HostPort: first.Address(), Logger: devserver.QuietLogger()})
	require.NoError(t, err)
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, resp.GetCustomAttributes()["OrderId"])
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "launched", TaskQueue: "devserver-test"}, "AnyWorkflow")
	require.NoError(t, err)
	c.Close()
	first.Stop(20 * time.Second)
	require.True(t, first.Exited())

	_, port, err := net.SplitHostPort(first.Address())
	require.NoError(t, err)
	opts.Port, err = strconv.Atoi(port)
	require.NoError(t, err)
	second, err := devserver.Launch(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { second.Stop(10 * time.Second) })
	require.Equal(t, first.Address(), second.Address())
	c, err = client.Dial(client.Options{HostPort: second.Address(), Logger: devserver.QuietLogger()})
	require.NoError(t, err)
	defer c.Close()
	desc, err := c.DescribeWorkflow(ctx, "launched", "")
	require.NoError(t, err)
	require.Equal(t, run.GetRunID(), desc.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId())
}
