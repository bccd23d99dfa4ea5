package cluster

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"text/template"
)

// nodePorts are one node's gRPC and membership (ringpop) ports, one pair per
// service.
type nodePorts struct {
	frontend, history, matching, worker                 int
	frontendRing, historyRing, matchingRing, workerRing int
}

func freeNodePorts() (nodePorts, error) {
	ps, err := freePorts(8)
	if err != nil {
		return nodePorts{}, err
	}
	return nodePorts{ps[0], ps[1], ps[2], ps[3], ps[4], ps[5], ps[6], ps[7]}, nil
}

// Membership ports are stored in cluster_membership.rpc_port, a SMALLINT:
// a port above 32767 (every kernel-assigned ephemeral port on Linux) makes
// the server die at start with "value out of range for type smallint". So
// ports are chosen, for every service, from [lowPortMin, lowPortMax).
const lowPortMin, lowPortMax = 20000, 32000

var portCursor atomic.Int64

// freePorts returns n distinct loopback TCP ports below 32768 that were
// free a moment ago (all held open together while choosing, so they
// differ). The search starts at a random offset so that concurrent test
// processes rarely try the same ports.
func freePorts(n int) ([]int, error) {
	portCursor.CompareAndSwap(0, lowPortMin+rand.Int64N(lowPortMax-lowPortMin))
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n && tries < lowPortMax-lowPortMin; tries++ {
		p := int(lowPortMin + (portCursor.Add(1)-lowPortMin)%(lowPortMax-lowPortMin))
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		ls = append(ls, l)
		ports = append(ports, p)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("cluster: no %d free ports in [%d, %d)", n, lowPortMin, lowPortMax)
	}
	return ports, nil
}

// pgConn is where the Temporal databases live, as the server's config and
// the schema tool need it.
type pgConn struct {
	host           string
	port           int
	user, password string
}

func parsePG(raw string) (pgConn, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return pgConn{}, fmt.Errorf("cluster: PostgreSQL URL %q: want postgres://user[:password]@host[:port]/db", raw)
	}
	c := pgConn{host: u.Hostname(), port: 5432, user: u.User.Username()}
	c.password, _ = u.User.Password()
	if c.host == "" {
		c.host = "127.0.0.1"
	}
	if p := u.Port(); p != "" {
		if c.port, err = strconv.Atoi(p); err != nil {
			return pgConn{}, fmt.Errorf("cluster: PostgreSQL URL port %q", p)
		}
	}
	if c.user == "" {
		c.user = "postgres"
	}
	return c, nil
}

// The server reads base.yaml, then <env>.yaml from its config directory;
// each node runs with --env nodeN.
var baseTemplate = template.Must(template.New("base").Funcs(template.FuncMap{"q": quote}).Parse(`# Written by internal/dev/cluster (outflow); regenerated at every start.
log:
  stdout: true
  level: {{q .LogLevel}}

persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: {{.Shards}}
  datastores:
    default:
      sql:
        pluginName: postgres12
        databaseName: {{q .Database}}
        connectAddr: {{q .PGAddr}}
        connectProtocol: tcp
        user: {{q .PG.User}}
        password: {{q .PG.Password}}
        # Per service; four services per node. See internal/dev/cluster for the budget.
        maxConns: {{.MainMax}}
        maxIdleConns: {{.MainIdle}}
        maxConnLifetime: 1h
    visibility:
      sql:
        pluginName: postgres12
        databaseName: {{q .Visibility}}
        connectAddr: {{q .PGAddr}}
        connectProtocol: tcp
        user: {{q .PG.User}}
        password: {{q .PG.Password}}
        maxConns: {{.VisMax}}
        maxIdleConns: {{.VisIdle}}
        maxConnLifetime: 1h

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: {{q .Address}}

dcRedirectionPolicy:
  policy: noop

dynamicConfigClient:
  filepath: {{q .DynamicConfig}}
  pollInterval: 10s
`))

var nodeTemplate = template.Must(template.New("node").Parse(`# Node {{.Index}}: every service, on ports of its own.
services:
  frontend:
    rpc: {grpcPort: {{.P.frontend}}, membershipPort: {{.P.frontendRing}}, bindOnLocalHost: true}
  history:
    rpc: {grpcPort: {{.P.history}}, membershipPort: {{.P.historyRing}}, bindOnLocalHost: true}
  matching:
    rpc: {grpcPort: {{.P.matching}}, membershipPort: {{.P.matchingRing}}, bindOnLocalHost: true}
  worker:
    rpc: {grpcPort: {{.P.worker}}, membershipPort: {{.P.workerRing}}, bindOnLocalHost: true}
`))

// quote writes s as a YAML double-quoted scalar (a JSON string is one).
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// configDir is where the server's configuration lives, relative to Dir.
const configDir = "config"

func (c *Cluster) writeConfig() error {
	dir := filepath.Join(c.opts.Dir, configDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "base.yaml"))
	if err != nil {
		return err
	}
	err = baseTemplate.Execute(f, map[string]any{
		"LogLevel": c.opts.LogLevel, "Shards": c.opts.HistoryShards,
		"Database": c.opts.Database, "Visibility": c.visibility,
		"PGAddr":  net.JoinHostPort(c.pg.host, strconv.Itoa(c.pg.port)),
		"PG":      struct{ User, Password string }{c.pg.user, c.pg.password},
		"MainMax": MainMaxConns, "MainIdle": MainMaxIdleConns, "VisMax": VisibilityMaxConns, "VisIdle": VisibilityMaxIdle,
		"Address": c.Address(), "DynamicConfig": c.opts.DynamicConfig,
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cluster: write base.yaml: %w", err)
	}
	for _, n := range c.nodes {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("node%d.yaml", n.index)))
		if err != nil {
			return err
		}
		err = nodeTemplate.Execute(f, map[string]any{"Index": n.index, "P": portMap(n.ports)})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("cluster: write node%d.yaml: %w", n.index, err)
		}
	}
	return nil
}

func portMap(p nodePorts) map[string]int {
	return map[string]int{
		"frontend": p.frontend, "history": p.history, "matching": p.matching, "worker": p.worker,
		"frontendRing": p.frontendRing, "historyRing": p.historyRing, "matchingRing": p.matchingRing, "workerRing": p.workerRing,
	}
}

// serverArgs are the command line of node n.
func (c *Cluster) serverArgs(n *node) []string {
	return []string{"--root", c.opts.Dir, "--config", configDir, "--env", fmt.Sprintf("node%d", n.index), "--allow-no-auth", "start"}
}
