// Command bench measures outflow's relay on this machine, each figure beside
// a baseline taken in the same run, because absolute times drift on a shared
// machine and ratios do not:
//
//	go run ./cmd/bench [-quick] [-only handoff,latency,noop,write,trace,claim,idle,sources] [-cpuprofile FILE]
//	make bench
//
// It uses DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres)
// and the Temporal client's TEMPORAL_* environment (envconfig, default
// localhost:7233) and starts nothing itself. It never writes to the database
// of DATABASE_URL: every measurement runs in a scratch database
// outflow_bench_<run>_<phase> created on that server and dropped afterwards
// (the role needs CREATEDB). Workflows go to a task queue of their own,
// outflow-bench-<run>, which no worker polls; they are terminated by a batch
// operation at the end.
//
// The sources phase measures the polling, the CDC and the log relay sources
// side by side (OUTFLOW_RELAY_SOURCE=poll, cdc or log: that one alone). It needs
// wal_level=logical; when DATABASE_URL's server lacks it, the phase starts a
// throwaway cluster from the machine's initdb/pg_ctl and says so.
//
// Progress goes to stderr. Stdout gets one "name: value" line per figure as
// it is measured, then a Markdown table with targets and verdicts, then notes
// on method. See docs/performance.md.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/outflow/outflow/internal/bench/benchcmd"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/temporalclient"
)

func main() { benchcmd.Main("bench", parseFlags, run) }

// bench is what every measurement shares.
type bench struct {
	cfg config
	srv *server
	// tc is nil when no selected phase needs Temporal.
	tc        client.Client
	namespace string
	// store is the Temporal server's persistence store (GetClusterInfo):
	// "sqlite" for the dev server, a PostgreSQL or other SQL store for a
	// cluster. It picks the handoff target.
	store string
	// taskQueue has no worker: started workflows stay scheduled, so the
	// figures are Temporal's accept path only.
	taskQueue string
	// noCheckpoint is set once the role was refused a CHECKPOINT (settle).
	noCheckpoint bool
	rep          *report
	// logger receives the relay's and the Temporal client's warnings.
	logger *slog.Logger
	stderr io.Writer
	start  time.Time
}

// progress writes a timestamped line to stderr.
func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.stderr, "[%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	b := &bench{
		cfg:    cfg,
		rep:    &report{w: stdout},
		logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		stderr: stderr,
		start:  time.Now(),
	}
	if cfg.cpuProfile != "" {
		stop, err := benchcmd.StartCPUProfile(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	srv, err := newServer(ctx, database.URL())
	if err != nil {
		return err
	}
	b.srv = srv
	defer srv.Shutdown(func(err error) { b.progress("warning: %v; drop it by hand", err) })
	pgVersion, err := srv.Version(ctx)
	if err != nil {
		return err
	}
	b.taskQueue = "outflow-bench-" + srv.run
	temporalAddr := "-"
	if cfg.needsTemporal() {
		topts, err := temporalclient.ClientOptions()
		if err != nil {
			return err
		}
		topts.Logger = tlog.NewStructuredLogger(b.logger.With("component", "temporal-client"))
		temporalAddr = orDefault(topts.HostPort, client.DefaultHostPort)
		b.namespace = orDefault(topts.Namespace, client.DefaultNamespace)
		dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		tc, err := client.DialContext(dctx, topts)
		cancel()
		if err != nil {
			return fmt.Errorf("cannot reach Temporal at %s: %w (set TEMPORAL_ADDRESS; the bench starts no server)", temporalAddr, err)
		}
		defer tc.Close()
		b.tc = tc
		defer b.terminateWorkflows()
		info, err := tc.WorkflowService().GetClusterInfo(ctx, &workflowservice.GetClusterInfoRequest{})
		if err != nil {
			return fmt.Errorf("ask Temporal at %s which server it is: %w", temporalAddr, err)
		}
		b.store = info.GetPersistenceStore()
		temporalAddr += " (" + orDefault(b.store, "unknown store") + ")"
	}

	fmt.Fprintf(stdout, "# outflow bench (%s): %s %s/%s, %d CPUs, PostgreSQL %s, Temporal %s, run %s\n",
		cfg.mode(), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), pgVersion, temporalAddr, srv.run)
	b.progress("scratch databases outflow_bench_%s_* on %s:%d (dropped at the end); task queue %s (no worker)",
		srv.run, srv.Base.ConnConfig.Host, srv.Base.ConnConfig.Port, b.taskQueue)

	steps := []struct {
		phase string
		run   func(context.Context) error
	}{
		{"handoff", b.measureHandoff},
		{"latency", b.measureLatency},
		{"noop", b.measureRelayNoop},
		{"write", b.measureWriteOverhead},
		{"trace", b.measureTracing},
		{"claim", b.measureClaimScale},
		{"idle", b.measureIdleQueries},
		{"sources", b.measureSources},
	}
	for _, s := range steps {
		if !cfg.runs(s.phase) {
			continue
		}
		if err := s.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.phase, err)
		}
	}
	b.rep.writeTable(stdout)
	if missed := b.rep.missed(); len(missed) > 0 {
		b.progress("done in %s; missed targets: %s", time.Since(b.start).Round(time.Second), strings.Join(missed, ", "))
	} else {
		b.progress("done in %s; every target met", time.Since(b.start).Round(time.Second))
	}
	return nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
