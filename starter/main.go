// Command starter is outflow's outbox relay: it claims committed outbox
// events and starts one Temporal workflow per event (workflow ID = event_id),
// until SIGINT or SIGTERM, then shuts down gracefully.
//
//	go run ./starter
//
// Environment:
//
//	DATABASE_URL             PostgreSQL (pgx/v5 syntax); default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable.
//	                         The schema must be current (`go run ./cmd/outboxctl migrate`).
//	TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*, ...
//	                         The Temporal client, loaded with go.temporal.io/sdk/contrib/envconfig;
//	                         default localhost:7233, namespace "default". The relay starts while
//	                         Temporal is down and backs off until it is reachable.
//	OUTFLOW_TASK_QUEUE       Task queue of the started workflows; default "orders".
//	OUTFLOW_MAX_ATTEMPTS     Attempts before a failing event is quarantined; default 20.
//	OUTFLOW_FAILPOINTS       Fault injection, e.g. "relay.after_publish=crash" (see package failpoints);
//	                         a malformed value stops the process at start.
//	METRICS_ADDR             Serve Prometheus /metrics on this address (e.g. 127.0.0.1:9102); off when unset.
//	OUTFLOW_LOG_LEVEL        debug, info (default), warn or error.
//
// Retention cleanup (one pass per interval across all starters, by advisory lock;
// see outbox.Cleanup and `outboxctl cleanup`):
//
//	OUTFLOW_RETENTION        Keep published events this long; default 168h (7 days); 0 disables.
//	OUTFLOW_INBOX_RETENTION  Keep processed_events rows this long, at least OUTFLOW_RETENTION; default the same.
//	OUTFLOW_CLEANUP_INTERVAL Time between passes; default 10m.
//	OUTFLOW_CLEANUP_BATCH    Rows per batch (one short transaction each); default 1000.
//	OUTFLOW_REPLAY_HORIZON   How far back `outboxctl replay` may reach; default (and at most) the
//	                         Temporal namespace's retention, read with DescribeNamespace. Replays of
//	                         older events are acknowledged without a start (docs/time-and-money.md).
//
// Tuning (defaults are those of outbox.Config):
//
//	OUTFLOW_RELAY_BATCH      Events per claim; default 100.
//	OUTFLOW_RELAY_LEASE      Claim lease, a Go duration; default 30s.
//	OUTFLOW_RELAY_POLL       Safety poll when no NOTIFY arrives; default 5s.
//	OUTFLOW_RELAY_IN_FLIGHT  Concurrent workflow starts (across orders); default 16.
//
// On start it logs one line, `relay started owner=... `, with its effective
// configuration.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/outflow/outflow/failpoints"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/temporalpub"
	"github.com/outflow/outflow/workflows"
)

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	if err := run(logger); err != nil {
		logger.Error("relay failed", "error", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	fps, err := failpoints.FromEnv()
	if err != nil {
		return fmt.Errorf("%s: %w", failpoints.EnvVar, err)
	}
	cfg, err := configFromEnv()
	if err != nil {
		return err
	}
	taskQueue := envOr("OUTFLOW_TASK_QUEUE", workflows.DefaultTaskQueue)
	ccfg, err := cleanupConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	if err := checkFixedHorizons(); err != nil {
		return err
	}
	configuredHorizon, err := replayHorizonFromEnv(os.Getenv)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	pool, err := database.OpenChecked(ctx, database.URL())
	if err != nil {
		return err
	}
	defer pool.Close()

	topts, err := temporalpub.ClientOptionsFromEnv()
	if err != nil {
		return err
	}
	topts.Logger = tlog.NewStructuredLogger(logger.With("component", "temporal-client"))
	// Lazy: the relay starts while Temporal is unreachable and backs off.
	tc, err := client.NewLazyClient(topts)
	if err != nil {
		return fmt.Errorf("temporal client for %s: %w", orDefault(topts.HostPort, client.DefaultHostPort), err)
	}
	defer tc.Close()

	cfg.Logger = logger
	cfg.Failpoints = fps
	metricsAddr := os.Getenv("METRICS_ADDR")
	var reg *prometheus.Registry
	if metricsAddr != "" {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		cfg.Registerer = reg
	}
	namespace := orDefault(topts.Namespace, client.DefaultNamespace)
	pcfg := temporalpub.Config{TaskQueue: taskQueue, Logger: logger, Namespace: namespace, ReplayHorizon: configuredHorizon}
	if reg != nil {
		pcfg.Registerer = reg
	}
	pub := temporalpub.New(tc, pcfg)
	relay, err := outbox.New(pool, pub, cfg)
	if err != nil {
		return err
	}

	// The replay horizon is checked against the namespace retention before
	// the relay runs when Temporal answers now, and in the background
	// otherwise; a violation stops the relay.
	guard := &horizonGuard{pool: pool, pub: pub, namespace: namespace, configured: configuredHorizon, logger: logger}
	if _, err := guard.check(ctx, 3*time.Second); err != nil {
		return err
	}
	ctx, stopRelay := context.WithCancelCause(ctx)
	defer stopRelay(nil)
	go func() {
		if err := guard.run(ctx); err != nil {
			stopRelay(err)
		}
	}()

	if reg != nil {
		srv, err := serveMetrics(metricsAddr, reg, logger)
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}

	if ccfg.Retention > 0 {
		var registerer prometheus.Registerer // a nil *Registry is not a nil interface
		if reg != nil {
			registerer = reg
		}
		sched, err := newCleanupSchedule(pool, ccfg, fps, registerer, logger)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); sched.run(cctx) }()
		defer func() { cancel(); <-done }()
	}

	eff := relay.Config()
	logger.Info("relay started",
		"owner", relay.Owner(),
		"temporal", orDefault(topts.HostPort, client.DefaultHostPort),
		"namespace", namespace,
		"task_queue", taskQueue,
		"batch", eff.BatchSize, "lease", eff.Lease, "publish_timeout", eff.PublishTimeout,
		"poll", eff.PollInterval, "in_flight", eff.MaxInFlight, "max_attempts", eff.MaxAttempts,
		"metrics_addr", metricsAddr, "failpoints", os.Getenv(failpoints.EnvVar),
		"retention", ccfg.Retention, "cleanup_interval", ccfg.Interval, "replay_horizon", orDefault(os.Getenv("OUTFLOW_REPLAY_HORIZON"), "namespace retention"))
	err = relay.Run(ctx)
	logger.Info("relay stopped", "owner", relay.Owner())
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// configFromEnv reads the relay's tuning variables; unset means the
// outbox.Config default.
func configFromEnv() (outbox.Config, error) {
	var cfg outbox.Config
	var errs []error
	intVar := func(name string, dst *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive integer", name, v))
				return
			}
			*dst = n
		}
	}
	durVar := func(name string, dst *time.Duration) {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive Go duration such as 30s or 500ms", name, v))
				return
			}
			*dst = d
		}
	}
	intVar("OUTFLOW_MAX_ATTEMPTS", &cfg.MaxAttempts)
	intVar("OUTFLOW_RELAY_BATCH", &cfg.BatchSize)
	intVar("OUTFLOW_RELAY_IN_FLIGHT", &cfg.MaxInFlight)
	durVar("OUTFLOW_RELAY_LEASE", &cfg.Lease)
	durVar("OUTFLOW_RELAY_POLL", &cfg.PollInterval)
	return cfg, errors.Join(errs...)
}

func serveMetrics(addr string, reg *prometheus.Registry, logger *slog.Logger) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("METRICS_ADDR=%s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server failed", "addr", addr, "error", err)
		}
	}()
	logger.Info("serving metrics", "addr", l.Addr().String())
	return srv, nil
}

func logLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(envOr("OUTFLOW_LOG_LEVEL", "info")))); err != nil {
		return slog.LevelInfo
	}
	return l
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
