package cluster

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/outflow/outflow/internal/testdb"
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
// checks that every start succeeds (the SDK retries), that the survivor
// takes every shard, and that the node rejoins.
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
	var started, failed atomic.Int64
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
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, err := tc.ExecuteWorkflow(sctx, client.StartWorkflowOptions{ID: uuid.NewString(), TaskQueue: tq}, "Probe")
			cancel()
			if err != nil {
				failed.Add(1)
				t.Logf("start failed: %v", err)
			} else {
				started.Add(1)
			}
		}
	}()
	time.Sleep(2 * time.Second)
	took, err := c.FailNode(ctx, 2, 90*time.Second)
	require.NoError(t, err)
	t.Logf("node 2 SIGKILLed: node 1 owned every shard after %s; %d starts so far", took.Round(100*time.Millisecond), started.Load())
	n, err := c.TerminateBackends(ctx)
	require.NoError(t, err)
	t.Logf("%d backends of the Temporal databases terminated", n)
	before := started.Load()
	time.Sleep(3 * time.Second)
	require.Greater(t, started.Load(), before, "starts go on with one node")
	took, err = c.Rejoin(ctx, 2, 2*time.Minute)
	require.NoError(t, err)
	time.Sleep(2 * time.Second)
	close(stop)
	<-done
	t.Logf("node 2 rejoined in %s; %d starts, %d failed; %s", took.Round(100*time.Millisecond), started.Load(), failed.Load(), c.Summary(ctx))
	require.Zero(t, failed.Load(), "a start through the balancer must survive a node's death")
	require.NotEmpty(t, strings.TrimSpace(c.Summary(ctx)))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
