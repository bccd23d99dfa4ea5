package cluster

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"text/template"

	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
)

// nodePorts are one node's gRPC and membership (ringpop) ports, one pair per
// service.
type nodePorts struct {
	frontend, history, matching, worker                 int
	frontendRing, historyRing, matchingRing, workerRing int
}

func freeNodePorts() (nodePorts, error) {
	// ports.FreeN chooses below 32768: membership ports are stored in
	// cluster_membership.rpc_port, a SMALLINT, and a port above 32767 makes
	// the server die at start with "value out of range for type smallint".
	ps, err := ports.FreeN(8)
	if err != nil {
		return nodePorts{}, err
	}
	return nodePorts{ps[0], ps[1], ps[2], ps[3], ps[4], ps[5], ps[6], ps[7]}, nil
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
