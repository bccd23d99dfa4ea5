package testsuite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
	"github.com/outflow/outflow/providersim"
)

// Env is what the tests of one process share: the binaries, one Temporal dev
// server and one provider simulator. Each test gets its own database and
// task queue on top of it (see [NewStack]).
type Env struct {
	Dir      string
	Bin      Binaries
	Temporal *TemporalServer
	Sim      *proc.Process
	SimURL   string
	Client   client.Client
}

var (
	envOnce sync.Once
	shared  *Env
	envErr  error
)

// SharedEnv builds and starts the shared environment once; [CloseSharedEnv]
// (from TestMain) stops it.
func SharedEnv(t testing.TB) *Env {
	t.Helper()
	envOnce.Do(func() { shared, envErr = startEnv() })
	if envErr != nil {
		t.Fatalf("testsuite: %v", envErr)
	}
	return shared
}

// CloseSharedEnv stops what [SharedEnv] started, and the process's
// Temporal cluster on that backend.
func CloseSharedEnv() {
	if shared != nil {
		shared.Close()
	}
	closeCluster()
}

// PrivateEnv starts an environment of t's own (its own Temporal server and
// simulator), for tests that restart Temporal or inject provider faults,
// which would disturb tests sharing the environment. It stops when t ends.
// With OUTFLOW_TEST_TEMPORAL=cluster the simulator is its own but Temporal is
// the process's cluster (see [TemporalBackendEnvVar]).
func PrivateEnv(t testing.TB) *Env {
	t.Helper()
	env, err := startEnv()
	if err != nil {
		t.Fatalf("testsuite: %v", err)
	}
	t.Cleanup(env.Close)
	return env
}

// Close stops the environment's processes and removes its files.
func (e *Env) Close() {
	if e.Client != nil {
		e.Client.Close()
	}
	if e.Sim != nil {
		e.Sim.Stop(5 * time.Second)
	}
	if e.Temporal != nil {
		e.Temporal.Close()
	}
	_ = os.RemoveAll(e.Dir)
}

func startEnv() (*Env, error) {
	dir, err := os.MkdirTemp("", "outflow-testsuite-")
	if err != nil {
		return nil, err
	}
	bin, err := Build()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tmp, err := StartTemporal(ctx, bin.Temporal, dir)
	if err != nil {
		return nil, err
	}
	env := &Env{Dir: dir, Bin: bin, Temporal: tmp}
	port, err := ports.Free()
	if err != nil {
		return nil, err
	}
	env.SimURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	env.Sim, err = startProcess("providersim", bin.ProviderSim, filepath.Join(dir, "providersim.log"),
		[]string{fmt.Sprintf("PROVIDERSIM_ADDR=127.0.0.1:%d", port)})
	if err != nil {
		return nil, err
	}
	if err := env.Sim.WaitLog(ctx, "listening"); err != nil {
		return nil, err
	}
	env.Client, err = codecClient(tmp.Address())
	if err != nil {
		return nil, err
	}
	return env, nil
}

// Sim returns a client of the shared simulator.
func (e *Env) SimClient() *providersim.Client {
	return &providersim.Client{BaseURL: e.SimURL}
}

// Stack is one test's outflow deployment: its own database and task queue,
// and the processes it started, by name ("orderapi", "starter", "starter-2",
// "worker", ...).
type Stack struct {
	T           testing.TB
	Env         *Env
	DatabaseURL string
	Pool        *pgxpool.Pool
	TaskQueue   string
	APIAddr     string
	// CodecKeys is OUTFLOW_CODEC_KEYS of the stack's processes: the
	// payload codec is on in every test ([TestCodecKeys]) unless a test
	// sets it to "" before starting them.
	CodecKeys string
	// Source is the database's recorded relay source: "poll", "cdc" or
	// "log" (the order API writes to the log, the starters read it),
	// recorded as an operator does (outboxops.SetSource) before any
	// process starts.
	Source string
	// Slot is the cdc starters' replication slot (slots are server-wide, so
	// each stack has its own).
	Slot string
	// RelayEnv are more VAR=value settings for the starters (relays) the
	// stack starts after they are set; they win over the stack's own.
	RelayEnv []string
	// WorkerEnv and InventoryEnv are the same for the workers and the
	// inventory service (cmd/inventory) the stack starts after they are set.
	WorkerEnv    []string
	InventoryEnv []string
	// OrderAPIEnv is the same for the order API.
	OrderAPIEnv []string
	// FeedEnv is the same for the JetStream consumer cmd/orderfeed
	// ([Stack.UseJetStream] sets its stream).
	FeedEnv []string

	mu    sync.Mutex
	procs map[string]*proc.Process
	// verdict is what [Stack.Verdict] asked to print last on a failure.
	verdict []func() string
}

// Verdict registers a short account of a failure (a few lines: what was
// stuck, what was wrong) that the stack prints after the last lines of its
// processes' logs, so that it is the end of a failed test's output — the
// part a CI summary keeps — and not buried above the logs.
func (s *Stack) Verdict(f func() string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.verdict = append(s.verdict, f)
}

// NewStack creates a fresh database and task queue on the shared
// environment; processes are started with [Stack.Start].
func NewStack(t testing.TB) *Stack {
	t.Helper()
	return NewStackOn(t, SharedEnv(t))
}

// NewStackOn is [NewStack] on a given environment.
func NewStackOn(t testing.TB, env *Env) *Stack {
	t.Helper()
	return NewStackWith(t, env, StackOptions{})
}

// StackOptions choose a stack's relay source and database server.
type StackOptions struct {
	// Source is the relay source the stack's database records. Optional:
	// defaulted to "poll".
	Source string
	// AdminURL is the server the stack's database is created on. Optional:
	// defaulted to the shared server for poll, and for cdc to the process's
	// private wal_level=logical server (testdb.Logical), since the shared
	// server's settings must not change.
	AdminURL string
}

// NewCDCStack is [NewStack] with cdc starters on the process's private
// wal_level=logical server.
func NewCDCStack(t testing.TB) *Stack {
	t.Helper()
	return NewStackWith(t, SharedEnv(t), StackOptions{Source: "cdc"})
}

// NewLogStack is [NewStack] on a database whose source is the log: the
// order API writes its events to the append-only log and the starters
// read it.
func NewLogStack(t testing.TB) *Stack {
	t.Helper()
	return NewStackWith(t, SharedEnv(t), StackOptions{Source: "log"})
}

// NewStackWith is [NewStack] on a given environment with options.
func NewStackWith(t testing.TB, env *Env, o StackOptions) *Stack {
	t.Helper()
	if o.Source == "" {
		o.Source = "poll"
	}
	admin := o.AdminURL
	if admin == "" {
		admin = testdb.AdminURL()
		if o.Source == "cdc" {
			admin = testdb.Logical(t)
		}
	}
	url := testdb.NewURLOn(t, admin)
	pool := testdb.Open(t, url)
	if o.Source != outboxops.SourcePoll {
		if _, err := outboxops.SetSource(context.Background(), pool, o.Source, "testsuite", "the stack's source"); err != nil {
			t.Fatal(err)
		}
	}
	port, err := ports.Free()
	if err != nil {
		t.Fatal(err)
	}
	s := &Stack{
		T: t, Env: env, DatabaseURL: url, Pool: pool,
		TaskQueue: "orders-" + uuid.NewString()[:8],
		APIAddr:   fmt.Sprintf("127.0.0.1:%d", port),
		CodecKeys: TestCodecKeys,
		Source:    o.Source,
		Slot:      "outflow_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12],
		procs:     map[string]*proc.Process{},
	}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range s.procs {
			p.Stop(10 * time.Second)
		}
		if t.Failed() {
			for name, p := range s.procs {
				t.Logf("---- last lines of %s ----\n%s", name, p.LogTail(40))
			}
			for _, f := range s.verdict {
				t.Logf("---- verdict ----\n%s", f())
			}
		}
	})
	return s
}

// kindOf maps a process name like "worker-2" to its binary kind.
func kindOf(name string) string {
	kind, _, _ := strings.Cut(name, "-")
	return kind
}

// readyMarker is the log line each binary prints once it serves.
var readyMarker = map[string]string{
	"orderapi": "listening",
	"starter":  "relay started",
	"worker":   "worker started",
	// the inventory logs `listening addr=...` once it serves.
	"inventory": "listening",
	"orderfeed": "orderfeed started",
}

// Start runs the named process with the given failpoints ("" for none) and,
// unless it is expected to crash at once, waits until it is ready.
func (s *Stack) Start(name, failpoints string) *proc.Process {
	s.T.Helper()
	kind := kindOf(name)
	bin := s.binary(kind)
	env := s.processEnv(failpoints)
	switch kind {
	case "starter":
		env = append(env, s.RelayEnv...)
	case "worker":
		env = append(env, s.WorkerEnv...)
	case "inventory":
		env = append(env, s.InventoryEnv...)
	case "orderapi":
		env = append(env, s.OrderAPIEnv...)
	case "orderfeed":
		env = append(env, s.FeedEnv...)
	}
	logPath := filepath.Join(s.Env.Dir, fmt.Sprintf("%s-%s.log", strings.ReplaceAll(s.T.Name(), "/", "_"), name))
	p, err := startProcess(name, bin, logPath, env)
	if err != nil {
		s.T.Fatal(err)
	}
	s.mu.Lock()
	if old := s.procs[name]; old != nil && !old.Exited() {
		s.mu.Unlock()
		p.Kill()
		s.T.Fatalf("testsuite: %s is already running", name)
	}
	s.procs[name] = p
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.WaitLog(ctx, readyMarker[kind]); err != nil && !(failpoints != "" && p.Exited()) {
		s.T.Fatalf("testsuite: %v", err)
	}
	return p
}

// binary is the program of a process kind.
func (s *Stack) binary(kind string) string {
	switch kind {
	case "orderapi":
		return s.Env.Bin.OrderAPI
	case "starter":
		return s.Env.Bin.Starter
	case "worker":
		return s.Env.Bin.Worker
	case "inventory":
		return s.Env.Bin.Inventory
	case "orderfeed":
		return s.Env.Bin.OrderFeed
	}
	s.T.Fatalf("testsuite: unknown process kind %q", kind)
	return ""
}

// processEnv is the environment of the stack's processes.
func (s *Stack) processEnv(failpoints string) []string {
	env := []string{
		"DATABASE_URL=" + s.DatabaseURL,
		"TEMPORAL_ADDRESS=" + s.Env.Temporal.Address(),
		"TEMPORAL_NAMESPACE=default",
		"OUTFLOW_TASK_QUEUE=" + s.TaskQueue,
		"STRIPE_API_KEY=sk_test_outflow_testsuite",
		"STRIPE_API_BASE=" + s.Env.SimURL,
		"EMAIL_API_KEY=re_outflow_testsuite",
		"EMAIL_API_BASE=" + s.Env.SimURL,
		"ORDERAPI_ADDR=" + s.APIAddr,
		// Short leases and polls so recovery after a crash takes seconds.
		"OUTFLOW_RELAY_LEASE=3s",
		"OUTFLOW_RELAY_POLL=1s",
		"OUTFLOW_FAILPOINTS=" + failpoints,
		"OUTFLOW_CODEC_KEYS=" + s.CodecKeys,
		"OUTFLOW_CDC_SLOT=" + s.Slot,
		// The cdc sweeper takes what the stream left after this.
		"OUTFLOW_CDC_GRACE=3s",
	}
	return env
}

// Proc returns the current process of that name.
func (s *Stack) Proc(name string) *proc.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.procs[name]
}

// API returns a client of this stack's order service.
func (s *Stack) API() *OrderClient {
	return NewOrderClient("http://" + s.APIAddr)
}

// Outboxctl runs the operator CLI against this stack's database (and its
// Temporal server: forget-customer asks it which workflows still run) and
// returns its combined output; a non-zero exit is an *exec.ExitError.
func (s *Stack) Outboxctl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.Env.Bin.Outboxctl, args...)
	cmd.Env = append(baseEnv(), "DATABASE_URL="+s.DatabaseURL, "OUTFLOW_CODEC_KEYS="+s.CodecKeys,
		"TEMPORAL_ADDRESS="+s.Env.Temporal.Address(), "TEMPORAL_NAMESPACE=default")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
