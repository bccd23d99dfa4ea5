// Command inventory is outflow's second service, the worked example of a
// service that adopts the outbox with outflow's public packages alone
// (outbox, outbox/temporalpub, inbox, failpoints), as a service of another
// team would be; a test (deps_test.go) fails if it imports anything else of
// outflow's. It holds stock per SKU in a PostgreSQL database of its own,
// reserves and releases it for orders over HTTP, and tells each order's saga
// what it did by signal. The whole service is this directory: the binary
// (main.go), the service and its transaction (service.go), the HTTP API
// (http.go), the events and their signal routes (events.go), its schema
// (migrate.go, migrations/) and its statements (queries.sql, sql.go).
//
// Every reserve or release is one transaction holding the reservation's
// change, an inbox row (package inbox, keyed by the request's
// Idempotency-Key), the answer stored under that key, and an outbox event
// (StockReserved, StockRejected or StockReleased); the answer is written
// only after the commit. The relay (outbox.NewRelay with the temporalpub
// publisher of [Routes]) delivers each event as a signal to the workflow
// the reserve request named, the saga, which receives them through package
// eventsignal, each event once. Where the events go (outbox_events or the
// append-only log) and which relay reads them is the database's recorded
// source (`outboxctl source set`), followed by outbox.NewRelay.
//
// Configuration is the environment (`inventory -h` lists it, touching
// nothing); at start it migrates its database (its own tables and the
// outbox's), logs `listening addr=HOST:PORT` with the address bound, and
// serves until SIGINT or SIGTERM. docs/inventory.md is the guide and
// docs/reference.md lists its settings, endpoints, failpoint and events.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.temporal.io/sdk/client"
	otelinterceptor "go.temporal.io/sdk/contrib/opentelemetry"
	tlog "go.temporal.io/sdk/log"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/cmdkit"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/temporalpub"
)

const name = "inventory"

// envVar is one variable the binary reads, as -h shows it.
type envVar struct{ name, def, meaning string }

// The defaults of the variables.
const (
	DatabaseURLDefault = "postgres://postgres@127.0.0.1:5432/inventory?sslmode=disable"
	AddrDefault        = "127.0.0.1:8090"
	TemporalDefault    = "127.0.0.1:7233"
)

var envVars = []envVar{
	{"INVENTORY_DATABASE_URL", DatabaseURLDefault, "the inventory's own PostgreSQL database (pgx syntax); migrated at start"},
	{"INVENTORY_ADDR", AddrDefault, "HTTP listen address, host:port (port 0 picks a free one)"},
	{"TEMPORAL_ADDRESS", TemporalDefault, "the Temporal frontend the relay signals the sagas through"},
	{"TEMPORAL_NAMESPACE", "default", "the sagas' namespace"},
	{"INVENTORY_SIGNAL", DefaultSignal, "the signal name the events are delivered as (the saga's eventsignal channel)"},
	{"INVENTORY_SAGA_WORKFLOW", "none: signal only", "the workflow type Signal-With-Start starts, with no input, when an event's saga does not exist; unset, an event only signals its saga, and one whose saga does not exist (forgotten behind the namespace retention) is handled as one whose saga closed"},
	{"INVENTORY_SAGA_TASK_QUEUE", "orders", "the task queue of the workflows started for the events"},
	{"INVENTORY_CLOSED_WORKFLOW", "none: quarantine", "workflow type started for an event whose saga already closed or does not exist; unset, the event is quarantined"},
	{"METRICS_ADDR", "none", "when set, serves Prometheus metrics on http://ADDR/metrics"},
	{retentionEnv, "168h", "keep published events (and inbox rows) this long, and in log mode a range partition of outbox_log this long after the sequence passed it; 0 turns cleanup off (the log's ranges are still made ahead)"},
	{inboxRetentionEnv, retentionEnv, "keep processed_events rows this long, at least " + retentionEnv + "; an answered request's key is kept longer, with its answer"},
	{cleanupIntervalEnv, "10m", "time between retention passes"},
	{cleanupBatchEnv, "1000", "rows per cleanup batch"},
	{failpoints.EnvVar, "none", "fault injection for tests, e.g. inventory.after_commit=crash"},
	{"OUTFLOW_LOG_LEVEL", "info", "debug, info, warn or error"},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run returns the exit status: 0, 1 (the service failed) or 2 (a bad
// flag or setting).
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	printVersion := fs.Bool("version", false, "print the module version and VCS revision, and exit")
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(stdout, fs)
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "usage: %s [flags] (%s -h for help)\n", name, name)
		return 2
	case *printVersion:
		fmt.Fprint(stdout, cmdkit.Version(name, version))
		return 0
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "%s: no arguments expected, got %q\n", name, fs.Args())
		return 2
	}
	cfg, err := configFromEnv(os.Getenv)
	if err != nil {
		for line := range strings.SplitSeq(err.Error(), "\n") {
			fmt.Fprintf(stderr, "%s: %s\n", name, line)
		}
		fmt.Fprintf(stderr, "%s: -h lists the environment variables and their defaults\n", name)
		return 2
	}
	logger := slog.New(cmdkit.LogHandler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel})))
	tp, stopTracing, err := cmdkit.StartTracing(context.Background(), os.Getenv, serviceName, logger)
	cfg.tracing = tp != nil
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	defer stopTracing()
	if err := serve(cfg, logger); err != nil {
		logger.Error("inventory failed", "err", err)
		return 1
	}
	return 0
}

func printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "%s: outflow's inventory service: reserves and releases stock for orders over HTTP, each change with its inbox row and outbox event in one transaction, and relays the events as signals to the orders' sagas, until SIGINT or SIGTERM.\n\nusage: %s [flags]\n\nenvironment:\n", name, name)
	for _, v := range envVars {
		fmt.Fprintf(w, "  %s (default %s)\n    \t%s\n", v.name, v.def, v.meaning)
	}
	fmt.Fprintln(w, "\nflags:\n  -h, --help\n    \tprint this help and exit")
	cmdkit.PrintFlags(w, fs) // two dashes, as every outflow binary's help
	fmt.Fprintln(w, "\nA malformed setting stops it before it serves (exit status 2). docs/inventory.md is the guide, docs/reference.md the HTTP API.")
}

// version is the release a build is of, set by the Makefile's builds with
// -ldflags "-X main.version=v0.1.0" (git describe); empty, the module
// version from the build information stands (cmdkit.Version).
var version string

// serviceName is the service's default OTEL_SERVICE_NAME.
const serviceName = "outflow-inventory"

// config is the binary's environment.
type config struct {
	// tracing: OTEL_EXPORTER_OTLP_ENDPOINT turned tracing on (cmdkit.StartTracing).
	tracing     bool
	databaseURL string
	addr        string
	metricsAddr string
	temporal    client.Options
	routes      RouteConfig
	failpoints  *failpoints.Set
	logLevel    slog.Level
	// retention is the database's retention (OUTFLOW_RETENTION, ...).
	retention outboxops.ScheduleConfig
}

// configFromEnv reads every variable and reports every bad one at once.
func configFromEnv(getenv func(string) string) (config, error) {
	get := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	c := config{
		databaseURL: get("INVENTORY_DATABASE_URL", DatabaseURLDefault),
		addr:        get("INVENTORY_ADDR", AddrDefault),
		metricsAddr: getenv("METRICS_ADDR"),
		temporal:    client.Options{HostPort: get("TEMPORAL_ADDRESS", TemporalDefault), Namespace: get("TEMPORAL_NAMESPACE", "default")},
		routes: RouteConfig{
			Signal:         get("INVENTORY_SIGNAL", DefaultSignal),
			Workflow:       getenv("INVENTORY_SAGA_WORKFLOW"),
			TaskQueue:      get("INVENTORY_SAGA_TASK_QUEUE", "orders"),
			ClosedWorkflow: getenv("INVENTORY_CLOSED_WORKFLOW"),
		},
	}
	var errs []error
	if _, err := pgxpool.ParseConfig(c.databaseURL); err != nil {
		errs = append(errs, errors.New("INVENTORY_DATABASE_URL: not a PostgreSQL URL (pgx syntax)"))
	}
	for _, a := range []struct{ name, value string }{{"INVENTORY_ADDR", c.addr}, {"METRICS_ADDR", c.metricsAddr}, {"TEMPORAL_ADDRESS", c.temporal.HostPort}} {
		if a.value == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.value); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want host:port: %v", a.name, a.value, err))
		}
	}
	retention, err := retentionFromEnv(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	c.retention = retention
	fp, err := failpoints.Parse(os.Getenv(failpoints.EnvVar))
	if err != nil {
		errs = append(errs, fmt.Errorf("%s=%q: %w", failpoints.EnvVar, getenv(failpoints.EnvVar), err))
	}
	c.failpoints = fp
	if err := c.logLevel.UnmarshalText([]byte(get("OUTFLOW_LOG_LEVEL", "info"))); err != nil {
		errs = append(errs, fmt.Errorf("OUTFLOW_LOG_LEVEL=%q: want debug, info, warn or error", getenv("OUTFLOW_LOG_LEVEL")))
	}
	return c, errors.Join(errs...)
}

// serve runs the service: migrate, then the HTTP API and the relay side by
// side until a signal, or until either fails.
func serve(cfg config, logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if spec := os.Getenv(failpoints.EnvVar); spec != "" {
		logger.Warn("failpoints enabled", "spec", spec)
	}

	poolCfg, err := pgxpool.ParseConfig(cfg.databaseURL)
	if err != nil {
		return err
	}
	if poolCfg.MaxConns > 8 {
		poolCfg.MaxConns = 8
	}
	db, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fmt.Errorf("connect to INVENTORY_DATABASE_URL: %w", err)
	}
	defer db.Close()
	if err := Migrate(ctx, db); err != nil {
		return err
	}

	reg := cmdkit.NewRegistry()
	svc, err := NewService(ServiceConfig{DB: db, Registerer: reg, Logger: logger, Failpoints: cfg.failpoints})
	if err != nil {
		return err
	}

	// A lazy client: the API serves while Temporal is down, and the relay
	// keeps the events until it answers.
	topts := cfg.temporal
	topts.Logger = tlog.NewStructuredLogger(logger.With("component", "temporal"))
	if cfg.tracing {
		// The saga's signals and the late-event workflows carry the span
		// of the publish that sent them, as the starter's do.
		ti, err := otelinterceptor.NewTracingInterceptor(otelinterceptor.TracerOptions{})
		if err != nil {
			return fmt.Errorf("the Temporal tracing interceptor: %w", err)
		}
		topts.Interceptors = append(topts.Interceptors, ti)
	}
	tc, err := client.NewLazyClient(topts)
	if err != nil {
		return fmt.Errorf("temporal client: %w", err)
	}
	defer tc.Close()
	pub, err := temporalpub.New(tc, topts, temporalpub.Config{
		TaskQueue: cfg.routes.TaskQueue, Routes: Routes(cfg.routes), Logger: logger, Registerer: reg,
	})
	if err != nil {
		return err
	}
	// The relay of the database's recorded source (outboxctl source set),
	// which the service's outbox.Enqueue writes to as well.
	relay, err := outbox.NewRelay(db, pub, outbox.RelayConfig{Registerer: reg, Logger: logger, Failpoints: cfg.failpoints})
	if err != nil {
		return err
	}

	// The database's retention, as a starter keeps its own: old published
	// events and inbox rows go, and the log's ranges are made ahead of its
	// sequence whatever the source, so an enqueue never runs out of them.
	scfg := cfg.retention
	scfg.Failpoints, scfg.Registerer, scfg.Logger = cfg.failpoints, reg, logger
	sched, err := outboxops.NewSchedule(db, scfg)
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on INVENTORY_ADDR=%s: %w", cfg.addr, err)
	}
	var h http.Handler = svc.Handler()
	if cfg.tracing {
		h = otelhttp.NewHandler(h, "inventory")
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errs := make(chan error, 3)
	if cfg.metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		mln, err := net.Listen("tcp", cfg.metricsAddr)
		if err != nil {
			return fmt.Errorf("listen on METRICS_ADDR=%s: %w", cfg.metricsAddr, err)
		}
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { errs <- fmt.Errorf("metrics on METRICS_ADDR=%s: %w", cfg.metricsAddr, msrv.Serve(mln)) }()
		defer msrv.Close()
		logger.Info("serving metrics", "addr", mln.Addr().String())
	}
	relayCtx, stopRelay := context.WithCancel(ctx)
	defer stopRelay()
	relayDone := make(chan struct{})
	go func() {
		defer close(relayDone)
		if err := relay.Run(relayCtx); err != nil && relayCtx.Err() == nil {
			errs <- fmt.Errorf("relay: %w", err)
		}
	}()
	schedDone := make(chan struct{})
	go func() { defer close(schedDone); sched.Run(relayCtx) }()
	go func() { errs <- fmt.Errorf("serve: %w", srv.Serve(ln)) }()
	logger.Info("listening", "addr", ln.Addr().String())

	var failed error
	select {
	case failed = <-errs:
	case <-ctx.Done():
	}
	stop()
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && failed == nil {
		failed = fmt.Errorf("shutdown: %w", err)
	}
	stopRelay()
	<-relayDone
	<-schedDone
	if failed == nil {
		logger.Info("stopped")
	}
	return failed
}
