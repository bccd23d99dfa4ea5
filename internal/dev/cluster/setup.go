package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/types/known/durationpb"

	commonpb "go.temporal.io/api/common/v1"

	"github.com/outflow/outflow/internal/routes"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
)

// startNode starts node n and waits until its frontend answers health
// checks.
func (c *Cluster) startNode(ctx context.Context, n *node) error {
	n.startsMu.Lock()
	defer n.startsMu.Unlock()
	if n.proc != nil && !n.proc.Exited() {
		return fmt.Errorf("cluster: node %d is already running", n.index)
	}
	start := time.Now()
	p, err := startProc(fmt.Sprintf("node%d", n.index), c.opts.ServerBin, n.logPath, c.serverArgs(n)...)
	if err != nil {
		return err
	}
	n.proc = p
	deadline := time.Now().Add(2 * time.Minute)
	var lastErr error
	for {
		if lastErr = checkHealth(ctx, n.frontend()); lastErr == nil {
			c.say("node %d up in %s (frontend %s, history %s; log %s)", n.index,
				time.Since(start).Round(100*time.Millisecond), n.frontend(), n.history(), n.logPath)
			return nil
		}
		if p.Exited() {
			return fmt.Errorf("cluster: node %d exited during start-up:\n%s", n.index, p.LogTail(40))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: node %d not healthy after 2m: %v\n%s", n.index, lastErr, p.LogTail(40))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// checkHealth asks one frontend for its gRPC health.
func checkHealth(ctx context.Context, addr string) error {
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	tc, err := client.DialContext(dctx, client.Options{HostPort: addr, Logger: nopLogger{}})
	if err != nil {
		return err
	}
	defer tc.Close()
	_, err = tc.CheckHealth(dctx, &client.CheckHealthRequest{})
	return err
}

// Client dials the cluster's balanced frontend address for the default
// namespace; the caller closes it.
func (c *Cluster) Client(ctx context.Context) (client.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return client.DialContext(dctx, client.Options{HostPort: c.Address(), Namespace: Namespace, Logger: nopLogger{}})
}

// setupNamespace registers the default namespace with the chosen retention
// (or updates an existing one's) and the OrderId search attribute, through
// the operator API, the way an operator does on a cluster (the dev server
// does both from its command line).
func (c *Cluster) setupNamespace(ctx context.Context) error {
	tc, err := c.Client(ctx)
	if err != nil {
		return fmt.Errorf("cluster: dial %s: %w", c.Address(), err)
	}
	defer tc.Close()
	ws := tc.WorkflowService()
	deadline := time.Now().Add(time.Minute)
	retry := func(what string, f func() error) error {
		for {
			err := f()
			if err == nil {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster: %s: %w", what, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	err = retry("register namespace "+Namespace, func() error {
		d, err := ws.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: Namespace})
		var nf *serviceerror.NamespaceNotFound
		switch {
		case errors.As(err, &nf):
			_, err = ws.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
				Namespace:                        Namespace,
				Description:                      "outflow",
				WorkflowExecutionRetentionPeriod: durationpb.New(c.opts.Retention),
			})
			var exists *serviceerror.NamespaceAlreadyExists
			if errors.As(err, &exists) {
				err = errors.New("registered concurrently; describing again")
			}
			if err == nil {
				c.say("namespace %s registered, retention %s", Namespace, c.opts.Retention)
			}
			return err
		case err != nil:
			return err
		}
		if got := d.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != c.opts.Retention {
			cfg := d.GetConfig()
			cfg.WorkflowExecutionRetentionTtl = durationpb.New(c.opts.Retention)
			if _, err := ws.UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{Namespace: Namespace, Config: cfg}); err != nil {
				return err
			}
			c.say("namespace %s: retention %s -> %s", Namespace, got, c.opts.Retention)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// With SQL visibility a custom search attribute belongs to a namespace
	// (the operator names it: `temporal operator search-attribute create
	// -n default`).
	return retry("add search attribute "+SearchAttribute, func() error {
		list, err := tc.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: Namespace})
		if err != nil {
			return err
		}
		if t, ok := list.GetCustomAttributes()[SearchAttribute]; ok {
			if t != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
				return fmt.Errorf("namespace %s already has %s as %s, not Keyword", Namespace, SearchAttribute, t)
			}
			return nil
		}
		_, err = tc.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace:        Namespace,
			SearchAttributes: map[string]enumspb.IndexedValueType{SearchAttribute: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
		})
		if err == nil {
			c.say("search attribute %s (Keyword) added to namespace %s", SearchAttribute, Namespace)
		}
		return err
	})
}

// waitReady waits until every node's frontend accepts a workflow start
// carrying OrderId in the default namespace (each node's namespace registry
// catches up on its own, within seconds), and until every node owns
// history shards.
func (c *Cluster) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for _, n := range c.nodes {
		for {
			err := probeStart(ctx, n.frontend())
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster: node %d does not accept starts with %s: %w", n.index, SearchAttribute, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	all := make([]int, len(c.nodes))
	for i := range all {
		all[i] = i + 1
	}
	owned, err := c.WaitShards(ctx, all, true, 90*time.Second)
	if err != nil {
		return err
	}
	c.say("history shards per node: %v (of %d)", owned, c.opts.HistoryShards)
	return nil
}

// probeStart starts a workflow with OrderId through one frontend, on a task
// queue no worker polls, and deletes it again.
func probeStart(ctx context.Context, addr string) error {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tc, err := client.DialContext(dctx, client.Options{HostPort: addr, Namespace: Namespace, Logger: nopLogger{}})
	if err != nil {
		return err
	}
	defer tc.Close()
	id := "outflow-cluster-probe-" + uuid.NewString()
	run, err := tc.ExecuteWorkflow(dctx, client.StartWorkflowOptions{
		ID: id, TaskQueue: "outflow-cluster-probe",
		WorkflowExecutionTimeout: time.Minute,
		TypedSearchAttributes:    handoffSearchAttributes(),
	}, "OutflowClusterProbe")
	if err != nil {
		return err
	}
	_, err = tc.WorkflowService().DeleteWorkflowExecution(dctx, &workflowservice.DeleteWorkflowExecutionRequest{
		Namespace:         Namespace,
		WorkflowExecution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: run.GetRunID()},
	})
	return err
}

func handoffSearchAttributes() temporal.SearchAttributes {
	return temporal.NewSearchAttributes(routes.OrderIDKey.ValueSet("outflow-cluster-probe"))
}

// startUI starts the Temporal Web UI server pointed at the balancer.
func (c *Cluster) startUI(ctx context.Context) error {
	dir := filepath.Join(c.opts.Dir, "ui")
	if err := os.MkdirAll(filepath.Join(dir, "config"), 0o755); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`# Written by internal/dev/cluster (outflow).
temporalGrpcAddress: %s
host: 127.0.0.1
port: %d
enableUi: true
defaultNamespace: %s
refreshInterval: 0s
cors:
  cookieInsecure: true
  unsafeAllowAllOrigins: false
  allowOrigins: ["http://127.0.0.1:%d", "http://localhost:%d"]
`, quote(c.Address()), c.opts.UIPort, Namespace, c.opts.UIPort, c.opts.UIPort)
	if err := os.WriteFile(filepath.Join(dir, "config", "development.yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	p, err := startProc("ui", c.opts.UIServerBin, filepath.Join(c.opts.Dir, "ui.log"),
		"--root", dir, "--config", "config", "--env", "development", "start")
	if err != nil {
		return err
	}
	c.ui = p
	addr := fmt.Sprintf("127.0.0.1:%d", c.opts.UIPort)
	err = ports.Poll(ctx, "cluster: the Web UI server on "+addr, 30*time.Second, 200*time.Millisecond, func(context.Context) (bool, error) {
		if p.Exited() {
			return true, errors.New("exited")
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("cluster: the Web UI server did not listen on %s (%v):\n%s", addr, err, p.LogTail(20))
	}
	c.say("Web UI on http://%s", addr)
	return nil
}

// nopLogger silences the SDK client.
type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}
func (nopLogger) Info(string, ...any)  {}
func (nopLogger) Warn(string, ...any)  {}
func (nopLogger) Error(string, ...any) {}
