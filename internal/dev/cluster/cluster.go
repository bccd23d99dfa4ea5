// Package cluster runs Temporal the way a production deployment does: a
// cluster of two server processes on PostgreSQL, each running all four
// services (frontend, history, matching, worker) on ports of its own and
// sharing the two Temporal databases, behind one frontend address.
//
// It is what `make cluster` (cmd/cluster) runs, and what the crash suites
// run against with OUTFLOW_TEST_TEMPORAL=cluster. Start
//
//  1. creates the main and the visibility database on the given PostgreSQL
//     server (or reuses them) and brings their schemas to the server's
//     version with Temporal's SQL schema tool (bin/temporal-sql-tool, built
//     from go.temporal.io/server v1.29.1 through tools/go.mod; the schemas
//     are embedded in it);
//  2. writes the server configuration (a shared base.yaml, one file per node
//     with its ports) and points it at deploy/temporal/dynamicconfig.yaml,
//     the dynamic config docker-compose.yml mounts too;
//  3. starts node 1, then node 2 (bin/temporal-server), and a small TCP
//     balancer on [Cluster.Address] that hands each client connection to a
//     frontend that accepts it, the part a load balancer or a Kubernetes
//     Service plays in production (a client of one node's frontend would
//     lose Temporal whenever that node dies);
//  4. registers the "default" namespace with [Options.Retention] and the
//     OrderId Keyword search attribute through the operator API, and
//     returns once every node's frontend accepts a workflow start carrying
//     OrderId and both nodes own history shards.
//
// The databases are the cluster's state: [Options.Database] names them, and
// [Options.DropOnStop] drops them at [Cluster.Stop] (tests use per-run names
// and drop them; `make cluster` keeps outflow_temporal and
// outflow_temporal_visibility between runs, like the dev server's
// .data/temporal.db).
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// Environment variables naming the binaries; the Makefile exports them.
const (
	ServerEnvVar   = "OUTFLOW_TEMPORAL_SERVER"
	SQLToolEnvVar  = "OUTFLOW_TEMPORAL_SQL_TOOL"
	UIServerEnvVar = "OUTFLOW_TEMPORAL_UI_SERVER"
)

// Defaults of [Options].
const (
	// DefaultRetention is the default namespace's retention: as long as
	// docker-compose.yml's and as the relay keeps published events
	// (OUTFLOW_RETENTION, 168h), so every event still in the outbox can be
	// replayed and OUTFLOW_REPLAY_HORIZON's default (the retention) holds.
	DefaultRetention = 168 * time.Hour
	// DefaultHistoryShards: with 4 shards the ring put every shard on one
	// node; 16 split them between two. Fixed for the life of the databases.
	DefaultHistoryShards = 16
	// DefaultDatabase is the main database of `make cluster`; the
	// visibility database is its name + "_visibility".
	DefaultDatabase = "outflow_temporal"
	// Namespace is the namespace the cluster registers for outflow.
	Namespace = "default"
	// SearchAttribute is the custom search attribute every outflow workflow
	// carries (handoff.SearchAttributeOrderID).
	SearchAttribute = "OrderId"
)

// Pool sizes per service and node (each node runs four services, each with
// its own pools). The shared PostgreSQL of a small machine allows 100
// connections: with the server template's 20/20 and 2/2 two nodes exhaust it
// ("too many clients"). At most 8+3 per service is 88 for two nodes in the
// worst case; in practice history holds most of them and a node idles at
// 4x(1..4)+4x(0..1) (see docs/performance.md for the figures measured).
const (
	MainMaxConns       = 8
	MainMaxIdleConns   = 4
	VisibilityMaxConns = 3
	VisibilityMaxIdle  = 1
)

// Options configures a cluster.
type Options struct {
	// Dir receives the configuration and the nodes' logs. Required.
	Dir string
	// AdminURL is a URL to any database of the PostgreSQL server the
	// Temporal databases live on, as a role allowed to create databases.
	// Optional: defaulted to postgres://postgres@127.0.0.1:5432/postgres.
	AdminURL string
	// Database is the main database's name; the visibility database is
	// Database+"_visibility". Optional: defaulted to [DefaultDatabase].
	Database string
	// Fresh drops both databases before creating them. Optional.
	Fresh bool
	// DropOnStop drops both databases when the cluster stops. Optional.
	DropOnStop bool
	// Nodes is the number of server processes. Optional: defaulted to 2.
	Nodes int
	// HistoryShards is fixed when the databases are first set up.
	// Optional: defaulted to [DefaultHistoryShards].
	HistoryShards int
	// Retention of the default namespace. Optional: defaulted to
	// [DefaultRetention]; an existing namespace is updated to it.
	Retention time.Duration
	// Address is where the frontend balancer listens. Optional: defaulted
	// to a free port on 127.0.0.1.
	Address string
	// UIPort, when not zero, starts the Temporal Web UI server
	// (bin/temporal-ui-server) on 127.0.0.1:UIPort, pointed at Address.
	UIPort int
	// LogLevel of the server processes. Optional: defaulted to "warn".
	LogLevel string
	// Progress receives one line per step. Optional.
	Progress io.Writer
	// ServerBin, SQLToolBin and UIServerBin override the binaries.
	// Optional: $OUTFLOW_TEMPORAL_SERVER (…_SQL_TOOL, …_UI_SERVER), else
	// bin/temporal-server (bin/temporal-sql-tool, bin/temporal-ui-server)
	// in the checkout.
	ServerBin, SQLToolBin, UIServerBin string
	// DynamicConfig is the dynamic config file. Optional: defaulted to
	// deploy/temporal/dynamicconfig.yaml in the checkout.
	DynamicConfig string
}

// Cluster is a running Temporal cluster.
type Cluster struct {
	opts       Options
	pg         pgConn
	visibility string
	lb         *balancer
	ui         *proc.Process
	nodes      []*node
	started    time.Time
	// Ready is how long Start took, from the first database statement to
	// the cluster accepting starts with OrderId on every node.
	Ready time.Duration

	mu      sync.Mutex
	stopped bool
}

// node is one server process and its ports.
type node struct {
	index    int // 1-based
	ports    nodePorts
	proc     *proc.Process
	logPath  string
	startsMu sync.Mutex
}

// Start sets the cluster up and starts it; see the package comment.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, visibility: opts.Database + "_visibility", started: time.Now()}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if c.pg, err = parsePG(opts.AdminURL); err != nil {
		return nil, err
	}
	c.say("Temporal databases %s and %s on %s:%d", opts.Database, c.visibility, c.pg.host, c.pg.port)
	if err := c.setupDatabases(ctx); err != nil {
		return nil, err
	}
	if c.lb, err = newBalancer(opts.Address); err != nil {
		return nil, err
	}
	for i := 1; i <= opts.Nodes; i++ {
		ports, err := freeNodePorts()
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, &node{index: i, ports: ports, logPath: filepath.Join(opts.Dir, fmt.Sprintf("node%d.log", i))})
	}
	if err := c.writeConfig(); err != nil {
		return nil, err
	}
	var frontends []string
	for _, n := range c.nodes {
		frontends = append(frontends, n.frontend())
	}
	c.lb.setBackends(frontends)
	go c.lb.serve()
	// Node 1 alone first: it initialises the cluster metadata and the
	// system namespace; the others join its ring through the membership
	// table.
	for _, n := range c.nodes {
		if err := c.startNode(ctx, n); err != nil {
			return nil, err
		}
	}
	if err := c.setupNamespace(ctx); err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	if opts.UIPort != 0 {
		if err := c.startUI(ctx); err != nil {
			return nil, err
		}
	}
	c.Ready = time.Since(c.started)
	c.say("ready in %s: frontends %s behind %s", c.Ready.Round(100*time.Millisecond), strings.Join(frontends, ", "), c.Address())
	return c, nil
}

func (o *Options) defaults() error {
	if o.Dir == "" {
		return errors.New("cluster: Options.Dir is required")
	}
	abs, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	o.Dir = abs
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	if o.AdminURL == "" {
		o.AdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	if o.Database == "" {
		o.Database = DefaultDatabase
	}
	if !validIdent(o.Database) {
		return fmt.Errorf("cluster: database name %q: use lower-case letters, digits and _", o.Database)
	}
	if o.Nodes == 0 {
		o.Nodes = 2
	}
	if o.HistoryShards == 0 {
		o.HistoryShards = DefaultHistoryShards
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.LogLevel == "" {
		o.LogLevel = "warn"
	}
	if o.Address == "" {
		o.Address = "127.0.0.1:0"
	}
	if o.ServerBin, err = binary(o.ServerBin, ServerEnvVar, "temporal-server"); err != nil {
		return err
	}
	if o.SQLToolBin, err = binary(o.SQLToolBin, SQLToolEnvVar, "temporal-sql-tool"); err != nil {
		return err
	}
	if o.UIPort != 0 {
		if o.UIServerBin, err = binary(o.UIServerBin, UIServerEnvVar, "temporal-ui-server"); err != nil {
			return err
		}
	}
	if o.DynamicConfig == "" {
		root, err := checkout.Root()
		if err != nil {
			return fmt.Errorf("cluster: %w; set Options.DynamicConfig", err)
		}
		o.DynamicConfig = filepath.Join(root, "deploy", "temporal", "dynamicconfig.yaml")
	}
	if _, err := os.Stat(o.DynamicConfig); err != nil {
		return fmt.Errorf("cluster: dynamic config: %w", err)
	}
	return nil
}

// binary resolves one of the tools-module binaries.
func binary(explicit, envVar, name string) (string, error) {
	p := explicit
	if p == "" {
		p = os.Getenv(envVar)
	}
	if p == "" {
		root, err := checkout.Root()
		if err != nil {
			return "", fmt.Errorf("cluster: %w, and %s is unset; run `make bin/%s`", err, envVar, name)
		}
		p = filepath.Join(root, "bin", name)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("cluster: no %s at %s: run `make bin/%s` at the repository root (built from the Go module proxy through tools/go.mod)", name, p, name)
	}
	return p, nil
}

func validIdent(s string) bool {
	if s == "" || len(s) > 50 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

func (c *Cluster) say(format string, args ...any) {
	if c.opts.Progress != nil {
		fmt.Fprintf(c.opts.Progress, "cluster: "+format+"\n", args...)
	}
}

// Address is the frontend address clients use (TEMPORAL_ADDRESS): the
// balancer in front of every node's frontend.
func (c *Cluster) Address() string { return c.lb.addr() }

// UIURL is the Web UI's URL, or "" without one.
func (c *Cluster) UIURL() string {
	if c.ui == nil {
		return ""
	}
	return fmt.Sprintf("http://127.0.0.1:%d", c.opts.UIPort)
}

// Nodes is the number of server processes.
func (c *Cluster) Nodes() int { return len(c.nodes) }

// Frontend is node i's own frontend address (1-based).
func (c *Cluster) Frontend(i int) string { return c.nodes[i-1].frontend() }

// History is node i's history service address, the identity that owns
// shards.
func (c *Cluster) History(i int) string { return c.nodes[i-1].history() }

// Databases are the main and the visibility database's names.
func (c *Cluster) Databases() (main, visibility string) { return c.opts.Database, c.visibility }

// Retention is the default namespace's retention.
func (c *Cluster) Retention() time.Duration { return c.opts.Retention }

// NodeLog is node i's log file.
func (c *Cluster) NodeLog(i int) string { return c.nodes[i-1].logPath }

// PID is node i's process id, 0 when it is not running.
func (c *Cluster) PID(i int) int {
	n := c.nodes[i-1]
	n.startsMu.Lock()
	defer n.startsMu.Unlock()
	if n.proc == nil || n.proc.Exited() {
		return 0
	}
	return n.proc.Pid()
}

// RSS is node i's resident memory in bytes (0 when it is not running).
func (c *Cluster) RSS(i int) int64 {
	pid := c.PID(i)
	if pid == 0 {
		return 0
	}
	return rss(pid, "VmRSS")
}

// PeakRSS is node i's peak resident memory since its last start, in bytes.
func (c *Cluster) PeakRSS(i int) int64 {
	pid := c.PID(i)
	if pid == 0 {
		return 0
	}
	return rss(pid, "VmHWM")
}

// Summary is one line on the nodes' memory (now and peak, since each
// node's last start) and the Temporal databases' connections.
func (c *Cluster) Summary(ctx context.Context) string {
	var b strings.Builder
	for i := 1; i <= len(c.nodes); i++ {
		fmt.Fprintf(&b, "node %d: %d MiB resident (peak %d MiB); ", i, c.RSS(i)>>20, c.PeakRSS(i)>>20)
	}
	if m, v, err := c.Connections(ctx); err == nil {
		fmt.Fprintf(&b, "PostgreSQL connections: %d main + %d visibility", m, v)
	}
	if shards, err := c.ShardsPerNode(ctx); err == nil {
		fmt.Fprintf(&b, "; shards per node %v", shards)
	}
	dials := c.lb.dialCounts()
	b.WriteString("; client connections per node's frontend [")
	for i, n := range c.nodes {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%d", dials[n.frontend()])
	}
	b.WriteString("]")
	return b.String()
}

// KillNode SIGKILLs node i, as a machine failure would, and waits until the
// process is gone.
func (c *Cluster) KillNode(i int) {
	n := c.nodes[i-1]
	n.startsMu.Lock()
	defer n.startsMu.Unlock()
	if n.proc != nil {
		n.proc.Kill()
	}
}

// FailNode SIGKILLs node i and waits until the other nodes own every
// history shard; it returns how long that took after the kill.
func (c *Cluster) FailNode(ctx context.Context, i int, timeout time.Duration) (time.Duration, error) {
	c.KillNode(i)
	start := time.Now()
	if _, err := c.WaitShards(ctx, c.others(i), false, timeout); err != nil {
		return time.Since(start), err
	}
	return time.Since(start), nil
}

// Rejoin restarts node i and waits until it owns history shards again; it
// returns how long that took.
func (c *Cluster) Rejoin(ctx context.Context, i int, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := c.RestartNode(ctx, i); err != nil {
		return time.Since(start), err
	}
	all := append(c.others(i), i)
	_, err := c.WaitShards(ctx, all, true, timeout)
	return time.Since(start), err
}

// StopNode stops node i gracefully.
func (c *Cluster) StopNode(i int) {
	n := c.nodes[i-1]
	n.startsMu.Lock()
	defer n.startsMu.Unlock()
	if n.proc != nil {
		n.proc.Stop(30 * time.Second)
	}
}

// RestartNode starts node i again on its ports and configuration and waits
// until its frontend is healthy.
func (c *Cluster) RestartNode(ctx context.Context, i int) error {
	return c.startNode(ctx, c.nodes[i-1])
}

// Stop stops the UI, the nodes and the balancer, and drops the databases
// when [Options.DropOnStop] says so. It may be called more than once.
func (c *Cluster) Stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	c.mu.Unlock()
	if c.ui != nil {
		c.ui.Stop(5 * time.Second)
	}
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Go(func() {
			n.startsMu.Lock()
			defer n.startsMu.Unlock()
			if n.proc != nil {
				n.proc.Stop(30 * time.Second)
			}
		})
	}
	wg.Wait()
	if c.lb != nil {
		c.lb.close()
	}
	if c.opts.DropOnStop && c.pg.host != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := c.dropDatabases(ctx); err != nil {
			c.say("warning: %v; drop %s and %s by hand", err, c.opts.Database, c.visibility)
		}
	}
}

// TerminateBackends terminates every PostgreSQL backend connected to the
// Temporal databases (a failover or an idle-connection killer would), and
// returns how many there were.
func (c *Cluster) TerminateBackends(ctx context.Context) (int64, error) {
	conn, err := pgx.Connect(ctx, c.opts.AdminURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	return qTerminateBackends.Value(ctx, conn, temporalDatabasesArgs{Main: c.opts.Database, Visibility: c.visibility})
}

// Connections counts the PostgreSQL connections to the Temporal databases.
func (c *Cluster) Connections(ctx context.Context) (main, visibility int64, err error) {
	conn, err := pgx.Connect(ctx, c.opts.AdminURL)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	r, err := qConnections.One(ctx, conn, temporalDatabasesArgs{Main: c.opts.Database, Visibility: c.visibility})
	return r.Main, r.Visibility, err
}

func (n *node) frontend() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.ports.frontend))
}
func (n *node) history() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.ports.history)) }
