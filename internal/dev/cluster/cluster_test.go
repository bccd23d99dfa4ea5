package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protowire"

	// The order app's tables in testdb's template (it migrates the sets
	// the binary registers).
	_ "github.com/outflow/outflow/migrations"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestConfigIsWhatTheServerReads renders the configuration and, when
// bin/temporal-server is built, has the server itself load it.
func TestConfigIsWhatTheServerReads(t *testing.T) {
	dir := t.TempDir()
	lb, err := newBalancer("127.0.0.1:0")
	require.NoError(t, err)
	defer lb.close()
	c := &Cluster{
		opts: Options{Dir: dir, Database: "outflow_temporal_x", HistoryShards: 16, LogLevel: "warn",
			DynamicConfig: "/nonexistent/dynamicconfig.yaml"},
		visibility: "outflow_temporal_x_visibility",
		pg:         pgConn{host: "127.0.0.1", port: 5432, user: "postgres", password: `p"w:d`},
		lb:         lb,
	}
	for i := 1; i <= 2; i++ {
		ports, err := freeNodePorts()
		require.NoError(t, err)
		for _, p := range []int{ports.frontend, ports.historyRing, ports.workerRing} {
			require.Less(t, p, 32768, "membership ports are SMALLINT in cluster_membership")
		}
		c.nodes = append(c.nodes, &node{index: i, ports: ports})
	}
	require.NoError(t, c.writeConfig())
	base, err := os.ReadFile(filepath.Join(dir, configDir, "base.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(base), "numHistoryShards: 16")
	require.Contains(t, string(base), `password: "p\"w:d"`)
	require.Contains(t, string(base), "maxConns: 8")

	server, err := binary("", ServerEnvVar, "temporal-server")
	if err != nil {
		t.Logf("not loading it with the server: %v", err)
		return
	}
	out, err := exec.Command(server, "--config", filepath.Join(dir, configDir), "--env", "node2", "render-config").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "outflow_temporal_x_visibility")
	require.Contains(t, string(out), "numHistoryShards: 16", "the rendered config: %s", out)
}

func TestShardOwnerIsField3(t *testing.T) {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 7)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, 12)
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendString(b, "127.0.0.1:27330-12-07ff1325")
	b = protowire.AppendTag(b, 6, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	require.Equal(t, "127.0.0.1:27330-12-07ff1325", shardOwner(b))
	require.Empty(t, shardOwner([]byte{0xff}))
}

// TestBalancerSkipsADeadFrontend: connections go to the frontend that
// accepts them, in turn, and a dead one is skipped.
func TestBalancerSkipsADeadFrontend(t *testing.T) {
	echo := func(tag string) (string, func()) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					_, _ = io.WriteString(c, tag)
				}()
			}
		}()
		return ln.Addr().String(), func() { ln.Close() }
	}
	a, closeA := echo("a")
	b, closeB := echo("b")
	defer closeB()
	lb, err := newBalancer("127.0.0.1:0")
	require.NoError(t, err)
	defer lb.close()
	lb.setBackends([]string{a, b})
	go lb.serve()
	read := func() string {
		c, err := net.Dial("tcp", lb.addr())
		require.NoError(t, err)
		defer c.Close()
		got, _ := io.ReadAll(c)
		return string(got)
	}
	seen := map[string]int{}
	for range 4 {
		seen[read()]++
	}
	require.Equal(t, map[string]int{"a": 2, "b": 2}, seen)
	closeA()
	for range 4 {
		require.Equal(t, "b", read())
	}
}

// TestFailover starts a real two-node cluster (OUTFLOW_TEST_TEMPORAL=cluster
// only: it needs bin/temporal-server and bin/temporal-sql-tool), keeps
// starting workflows through the balancer while one node is SIGKILLed, and
// checks that every start gets through (the SDK retries, and a start it
// gives up on is sent again with the same id, as the relay does), that the
// survivor takes every shard, and that the node rejoins.
func TestFailover(t *testing.T) {
	if os.Getenv("OUTFLOW_TEST_TEMPORAL") != "cluster" {
		t.Skip("starts a Temporal cluster: OUTFLOW_TEST_TEMPORAL=cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Dir: t.TempDir(), AdminURL: testdb.AdminURL(), Database: TestDatabase(),
		DropOnStop: true, Progress: testWriter{t}})
	require.NoError(t, err)
	defer c.Stop()
	t.Logf("ready in %s; %s", c.Ready.Round(100*time.Millisecond), c.Summary(ctx))

	tc, err := c.Client(ctx)
	require.NoError(t, err)
	defer tc.Close()
	var started, failed, retried atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	tq := "failover-" + uuid.NewString()[:8]
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := startThroughFailover(ctx, tc, tq, &retried); err != nil {
				if ctx.Err() != nil {
					return // the test ended early; its own failure says why
				}
				failed.Add(1)
				t.Logf("start failed: %v", err)
			} else {
				started.Add(1)
			}
		}
	}()
	// A require that fails below ends the test: stop the starts first, so
	// none logs after the test has returned.
	stopStarts := sync.OnceFunc(func() { close(stop); <-done })
	defer stopStarts()
	time.Sleep(2 * time.Second)
	took, err := c.FailNode(ctx, 2, 90*time.Second)
	require.NoError(t, err)
	t.Logf("node 2 SIGKILLed: node 1 owned every shard after %s; %d starts so far", took.Round(100*time.Millisecond), started.Load())
	n, err := c.TerminateBackends(ctx)
	require.NoError(t, err)
	t.Logf("%d backends of the Temporal databases terminated", n)
	// Every connection of the survivor to its databases was just cut: its
	// shards are reloaded and a start in flight may wait out the SDK's 10 s
	// request timeout before it is sent again, so the starts are given a
	// minute, not a fixed few seconds, to go on.
	before, resumed := started.Load(), time.Now()
	require.Eventually(t, func() bool { return started.Load() > before+5 }, time.Minute, 100*time.Millisecond,
		"starts go on with one node")
	t.Logf("starts went on %s after the backends were terminated", time.Since(resumed).Round(100*time.Millisecond))
	took, err = c.Rejoin(ctx, 2, 2*time.Minute)
	require.NoError(t, err)
	time.Sleep(2 * time.Second)
	stopStarts()
	t.Logf("node 2 rejoined in %s; %d starts, %d failed, %d retried with the same workflow id; %s",
		took.Round(100*time.Millisecond), started.Load(), failed.Load(), retried.Load(), c.Summary(ctx))
	require.Zero(t, failed.Load(), "a start through the balancer must survive a node's death")
	require.NotEmpty(t, strings.TrimSpace(c.Summary(ctx)))
}

// startThroughFailover starts one workflow the way the relay does: a start
// the cluster answers with a transient code (a history shard moving between
// nodes can outlast the SDK's own retries, which give up after its 10 s
// request timeout with DeadlineExceeded) is sent again with the same
// workflow id, and an "already started" on such a retry means the first
// attempt got through. It fails on any other error, or when one id does not
// get through within a minute.
func startThroughFailover(ctx context.Context, tc client.Client, tq string, retried *atomic.Int64) error {
	id := uuid.NewString()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for attempt := 0; ; attempt++ {
		_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: tq}, "Probe")
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		switch {
		case err == nil, attempt > 0 && errors.As(err, &already):
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("workflow %s not started within a minute: %w", id, err)
		}
		switch serviceerror.ToStatus(err).Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Internal:
			retried.Add(1)
			time.Sleep(200 * time.Millisecond)
		default:
			return err
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestStatements: every statement of cluster.sql is bound in sql.go and
// reads the columns the database describes. Shards reads Temporal's own
// table, which a migrated database lacks: it is created as Temporal's
// PostgreSQL schema has it (schema/postgresql/v12/temporal/schema.sql).
func TestStatements(t *testing.T) {
	t.Parallel()
	pool, _ := testdb.New(t)
	_, err := pool.Exec(t.Context(), `CREATE TABLE shards (
		shard_id INTEGER NOT NULL,
		range_id BIGINT NOT NULL,
		data BYTEA NOT NULL,
		data_encoding VARCHAR(16) NOT NULL,
		PRIMARY KEY (shard_id))`)
	require.NoError(t, err)
	testdb.CheckStatementsOn(t, pool, queries, statements...)
}
