package testsuite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/internal/dev/cluster"
	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TemporalBackendEnvVar selects the Temporal the suites run against:
//
//   - unset or "dev": a dev server of the Temporal CLI (bin/temporal) per
//     environment, on SQLite (`make test`);
//   - "cluster": one two-node Temporal cluster on PostgreSQL per test
//     process (internal/dev/cluster; bin/temporal-server and
//     bin/temporal-sql-tool), shared by every environment of the process,
//     its databases created on TEST_DATABASE_URL's server under names of
//     the process's own and dropped at the end (`make test-cluster`). Its
//     configuration and node logs go to OUTFLOW_CLUSTER_LOGS when set (and
//     stay there), else to a temporary directory removed at the end.
const TemporalBackendEnvVar = "OUTFLOW_TEST_TEMPORAL"

// onCluster reports whether OUTFLOW_TEST_TEMPORAL selects the cluster.
func onCluster() (bool, error) {
	switch v := os.Getenv(TemporalBackendEnvVar); v {
	case "", "dev":
		return false, nil
	case "cluster":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want dev (the default) or cluster", TemporalBackendEnvVar, v)
	}
}

// TemporalServer is the Temporal of an environment. On the dev server (the
// default) it is a server the harness can stop and start again on the same
// port and database file, so workflow state survives a restart. On the
// cluster, Stop and Start are what an outage of a cluster is: Stop SIGKILLs
// one node (the nodes take turns) and terminates every PostgreSQL backend of
// the Temporal databases, then waits until the surviving node has taken
// over every history shard; Start restarts the node and waits until it owns
// shards again. Clients keep the same address throughout (the cluster's
// frontend balancer).
type TemporalServer struct {
	cli, dir string
	Port     int
	proc     *devserver.Process

	// cluster is set on the cluster backend; down is the node Stop killed
	// (0: none), faults how many Stops ran.
	cluster *cluster.Cluster
	down    int
	faults  int
}

// StartTemporal starts a dev server persisting to dir/temporal.db, or with
// OUTFLOW_TEST_TEMPORAL=cluster returns the process's cluster (started on
// first use).
func StartTemporal(ctx context.Context, cli, dir string) (*TemporalServer, error) {
	if c, err := onCluster(); err != nil {
		return nil, err
	} else if c {
		cl, err := processCluster(ctx)
		if err != nil {
			return nil, err
		}
		return &TemporalServer{cluster: cl}, nil
	}
	port, err := ports.Free()
	if err != nil {
		return nil, err
	}
	s := &TemporalServer{cli: cli, dir: dir, Port: port}
	return s, s.Start(ctx)
}

var (
	clusterMu  sync.Mutex
	clusterRun *cluster.Cluster
	clusterDir string
)

// processCluster starts this test process's cluster once.
func processCluster(ctx context.Context) (*cluster.Cluster, error) {
	clusterMu.Lock()
	defer clusterMu.Unlock()
	if clusterRun != nil {
		return clusterRun, nil
	}
	admin := testdb.AdminURL()
	if n, err := cluster.DropAbandoned(ctx, admin); err == nil && n > 0 {
		fmt.Printf("testsuite: dropped %d Temporal databases left by killed test processes\n", n)
	}
	dir, keep := os.Getenv("OUTFLOW_CLUSTER_LOGS"), true
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "outflow-cluster-"); err != nil {
			return nil, err
		}
		keep = false
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, cluster.Options{
		Dir: dir, AdminURL: admin, Database: cluster.TestDatabase(), DropOnStop: true,
		Progress: os.Stdout,
	})
	if err != nil {
		if !keep {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("testsuite: Temporal cluster: %w", err)
	}
	clusterRun = c
	if !keep {
		clusterDir = dir
	}
	return c, nil
}

// closeCluster stops the process's cluster and drops its databases.
func closeCluster() {
	clusterMu.Lock()
	defer clusterMu.Unlock()
	if clusterRun == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Printf("temporal cluster at the end: %s\n", clusterRun.Summary(ctx))
	clusterRun.Stop()
	if clusterDir != "" {
		_ = os.RemoveAll(clusterDir)
	}
	clusterRun = nil
}

// Address is the frontend's host:port.
func (s *TemporalServer) Address() string {
	if s.cluster != nil {
		return s.cluster.Address()
	}
	return fmt.Sprintf("127.0.0.1:%d", s.Port)
}

// Cluster is the cluster on the cluster backend, else nil.
func (s *TemporalServer) Cluster() *cluster.Cluster { return s.cluster }

// Start (re)starts the server and waits until it is healthy; on the cluster
// it restarts the node Stop killed.
func (s *TemporalServer) Start(ctx context.Context) error {
	if s.cluster != nil {
		if s.down == 0 {
			return nil
		}
		took, err := s.cluster.Rejoin(ctx, s.down, 2*time.Minute)
		if err != nil {
			return err
		}
		shards, _ := s.cluster.ShardsPerNode(ctx)
		fmt.Printf("temporal cluster: node %d restarted and owning shards again after %s (shards per node %v)\n",
			s.down, took.Round(100*time.Millisecond), shards)
		s.down = 0
		return nil
	}
	p, err := devserver.Launch(ctx, devserver.LaunchOptions{
		Options: devserver.Options{Port: s.Port, DBFile: filepath.Join(s.dir, "temporal.db"), LogLevel: "error"},
		CLI:     s.cli,
		LogFile: filepath.Join(s.dir, "temporal.log"),
		Env:     baseEnv(),
	})
	if err != nil {
		return err
	}
	s.proc = p
	return nil
}

// Stop stops the server gracefully (its state stays in the database file);
// on the cluster it is a node's crash and the loss of the Temporal
// databases' connections (see [TemporalServer]).
func (s *TemporalServer) Stop() {
	if s.cluster != nil {
		s.fail()
		return
	}
	if s.proc != nil {
		s.proc.Stop(20 * time.Second)
	}
}

// fail is Stop on the cluster.
func (s *TemporalServer) fail() {
	if s.down != 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s.faults++
	s.down = 2 - s.faults%2 // node 1 first, then node 2, ...
	fmt.Printf("temporal cluster before the fault: %s\n", s.cluster.Summary(ctx))
	before, _ := s.cluster.ShardsPerNode(ctx)
	took, err := s.cluster.FailNode(ctx, s.down, 90*time.Second)
	backends, berr := s.cluster.TerminateBackends(ctx)
	fmt.Printf("temporal cluster: node %d SIGKILLed (shards per node before %v); %d backends of the Temporal databases terminated (err %v); "+
		"the survivors owned every shard %s after the kill (err %v)\n",
		s.down, before, backends, berr, took.Round(100*time.Millisecond), err)
}

// Close ends the environment's use of Temporal: a dev server stops; the
// process's cluster keeps running for the other environments (TestMain
// stops it).
func (s *TemporalServer) Close() {
	if s.cluster != nil {
		if s.down != 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_ = s.Start(ctx)
		}
		return
	}
	s.Stop()
}

// Client dials the server.
func (s *TemporalServer) Client() (client.Client, error) {
	return client.Dial(client.Options{HostPort: s.Address(), Logger: devserver.QuietLogger()})
}
