// Package devserver starts a Temporal dev server for integration tests, from
// the Temporal CLI the repository builds (`make bin/temporal`), never from a
// download. The server registers the OrderId search attribute on its
// "default" namespace ([Server.RegisterNamespace] adds one without it), runs
// headless with SQLite in WAL mode, and can persist to a file so a test can
// stop it and start it again on the same state and port ("Temporal was
// down").
//
// A test package usually shares one server (it takes seconds to start) and
// isolates its tests with unique task queues and workflow IDs:
//
//	var temporal *devserver.Server
//
//	func TestMain(m *testing.M) {
//		srv, err := devserver.New(context.Background(), devserver.Options{})
//		if err != nil { fmt.Fprintln(os.Stderr, err); os.Exit(1) }
//		code := m.Run()
//		_ = srv.Stop()
//		os.Exit(code)
//	}
//
// A test that needs its own server calls [Start], which stops it at cleanup.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/outflow/outflow/outbox/outboxtest/dev/checkout"
	"github.com/outflow/outflow/outbox/outboxtest/dev/ports"
)

// CLIEnvVar names the Temporal CLI to run; the Makefile exports it.
const CLIEnvVar = "OUTFLOW_TEMPORAL_CLI"

// Options configures a dev server. The zero value is an in-memory server on
// a free port.
type Options struct {
	// DBFile persists the server's state to this SQLite file. Optional:
	// defaulted to in-memory state, lost when the server stops.
	DBFile string
	// Port is the frontend gRPC port on 127.0.0.1. Optional: defaulted to a
	// free port. Restarting on the same DBFile needs the same Port, so that
	// clients pointed at the old address find the new server.
	Port int
	// LogLevel is the server's log level. Optional: defaulted to "warn".
	LogLevel string
	// Output receives the server's stdout and stderr. Optional: defaulted to
	// this process's stderr (shown by `go test` only for failing packages
	// or with -v).
	Output io.Writer
	// DynamicConfig sets dynamic config keys of the server
	// (--dynamic-config-value KEY=VALUE, the value in YAML), e.g.
	// "frontend.namespaceRPS": "20" to throttle the namespace. Optional.
	DynamicConfig map[string]string
}

// Server is a running dev server.
type Server struct {
	srv     *testsuite.DevServer
	addr    string
	port    int
	logger  log.Logger
	stop    sync.Once
	stopErr error
}

// Start starts a dev server for t and stops it when t ends; it fails t with
// an actionable message when the server cannot start.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := New(ctx, opts)
	if err != nil {
		t.Fatalf("devserver: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Logf("devserver: stop: %v", err)
		}
	})
	return s
}

// RunTests is a TestMain's body for a package whose tests share one dev
// server: it starts the server (within two minutes), sets *shared to it,
// runs the tests and stops it, and returns the exit code (1 when the
// server cannot start).
//
//	func TestMain(m *testing.M) { os.Exit(devserver.RunTests(m, devserver.Options{}, &temporal)) }
func RunTests(m *testing.M, opts Options, shared **Server) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	srv, err := New(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*shared = srv
	defer srv.Stop() //nolint:errcheck // the tests are over
	return m.Run()
}

// New starts a dev server and waits until it accepts clients. The caller
// calls Stop.
func New(ctx context.Context, opts Options) (*Server, error) {
	cli, err := CLIPath()
	if err != nil {
		return nil, err
	}
	port := opts.Port
	if port == 0 {
		if port, err = ports.Free(); err != nil {
			return nil, err
		}
	}
	out := opts.Output
	if out == nil {
		out = os.Stderr
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn})))
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath: cli,
		ClientOptions: &client.Options{
			HostPort: addr,
			Logger:   logger,
		},
		DBFilename: opts.DBFile,
		LogLevel:   logLevel(opts),
		ExtraArgs:  serverFlags(opts),
		// EnableUI false makes StartDevServer pass --headless.
		Stdout: out,
		Stderr: out,
	})
	if err != nil {
		return nil, fmt.Errorf("devserver: start %s on %s: %w", cli, addr, err)
	}
	return &Server{srv: srv, addr: addr, port: port, logger: logger}, nil
}

// Address is the frontend's host:port, for TEMPORAL_ADDRESS or
// client.Options.HostPort.
func (s *Server) Address() string { return s.addr }

// Port is the frontend's port.
func (s *Server) Port() int { return s.port }

// Client is a client of the server's "default" namespace. Stop closes it.
func (s *Server) Client() client.Client { return s.srv.Client() }

// ClientOptions are the options of a client of namespace on this server
// ("" is "default", the namespace of [Server.Client]), for client.Dial and
// for temporalpub.New, which reads the namespace from them.
func (s *Server) ClientOptions(namespace string) client.Options {
	return client.Options{HostPort: s.addr, Namespace: namespace, Logger: s.logger}
}

// RegisterNamespace registers namespace on the server with the given
// workflow retention and waits until it takes requests. Unlike the
// namespaces the server creates at start ("default"), which the CLI gives
// the OrderId search attribute, it has no custom search attribute at all:
// it is the namespace of a team that never registered outflow's.
func (s *Server) RegisterNamespace(ctx context.Context, namespace string, retention time.Duration) error {
	_, err := s.Client().WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(retention),
	})
	if err != nil {
		return fmt.Errorf("devserver: register namespace %q: %w", namespace, err)
	}
	// The frontend reads an unknown namespace through to persistence, but
	// remembers a miss for a moment: wait until a request in it is answered.
	for {
		_, err := s.Client().CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devserver: namespace %q registered but not answering: %w (last: %w)", namespace, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop closes the client and stops the server, waiting for it to exit. It
// may be called more than once.
func (s *Server) Stop() error {
	s.stop.Do(func() {
		s.srv.Client().Close()
		s.stopErr = s.srv.Stop()
		var exit *exec.ExitError
		if errors.As(s.stopErr, &exit) {
			s.stopErr = nil // the CLI exits non-zero on SIGINT
		}
	})
	return s.stopErr
}

// CLIPath returns the Temporal CLI to run: $OUTFLOW_TEMPORAL_CLI, else
// bin/temporal at the repository root (found by walking up to go.mod).
func CLIPath() (string, error) {
	if p := os.Getenv(CLIEnvVar); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("devserver: %s=%s: %w; run `make bin/temporal` at the repository root", CLIEnvVar, p, err)
		}
		return p, nil
	}
	root, err := checkout.Root()
	if err != nil {
		return "", fmt.Errorf("devserver: %w, and %s is unset; run `make bin/temporal` and set %s", err, CLIEnvVar, CLIEnvVar)
	}
	p := filepath.Join(root, "bin", "temporal")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("devserver: no Temporal CLI at %s; run `make bin/temporal` at the repository root (it is built from the Go module proxy, never downloaded)", p)
	}
	return p, nil
}
