// Command starter is outflow's outbox relay: it claims committed outbox
// events and starts one Temporal workflow per event (workflow ID = event_id),
// publishes each to a NATS JetStream stream, or both (OUTFLOW_SINKS), until
// SIGINT or SIGTERM, then shuts down gracefully.
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
//	OUTFLOW_SINKS            Where events go: temporal (default), jetstream, or temporal,jetstream: each
//	                         event to both, in that order, marked once both acknowledged (a retry
//	                         publishes to both again; each sink absorbs its duplicate). Temporal's
//	                         variables are not read without temporal.
//	OUTFLOW_NATS_URL         The jetstream sink's server; default nats://127.0.0.1:4222.
//	OUTFLOW_NATS_STREAM      Its stream; default OUTFLOW. Created (subjects PREFIX.>, file storage)
//	                         when missing; an existing one whose duplicate window is shorter than
//	                         lease + publish timeout + probe pause (70s by default) stops the starter.
//	OUTFLOW_NATS_SUBJECT_PREFIX  Subjects are PREFIX.AGGREGATE_TYPE.AGGREGATE_ID; default outflow.
//	OUTFLOW_TASK_QUEUE       Task queue of the started workflows; default "orders".
//	OUTFLOW_ROUTES           The routes, for a relay over any team's outbox: comma-separated
//	                         EVENT_TYPE=WORKFLOW_TYPE or EVENT_TYPE=WORKFLOW_TYPE@TASK_QUEUE (default
//	                         task queue OUTFLOW_TASK_QUEUE), each optionally followed by
//	                         [SEARCH_ATTRIBUTE=PAYLOAD_FIELD]: a Keyword search attribute set from a
//	                         top-level field of the JSON payload (an event without it is quarantined).
//	                         A start carries no search attribute unless its route asks for one.
//	                         Unset: the order app's routes (OrderCreated, OrderCancelled, with OrderId).
//	                         A malformed value stops the process at start, naming every bad entry.
//	OUTFLOW_ROUTES_FILE      A file holding the routes instead: the same entries, one per line, '#'
//	                         starts a comment (for routes kept in configuration). Not with OUTFLOW_ROUTES.
//	OUTFLOW_RELAY_SOURCE     Deprecated: the relay's source (poll, cdc or log) is recorded in the
//	                         database (`outboxctl source`, `outboxctl source set`) and the starter
//	                         follows it without a restart. When set, the starter records this value
//	                         there at start and logs a deprecation line. Any other value stops it.
//	OUTFLOW_CDC_SLOT         The cdc source's replication slot; default outflow_outbox.
//	OUTFLOW_CDC_GRACE        How long the cdc source's polling sweeper leaves a new event to the
//	                         stream; default 10s.
//	OUTFLOW_MAX_ATTEMPTS     Attempts before a failing event is quarantined; default 20. A publish
//	                         that fails for Temporal's fault (unreachable, Unavailable, throttled, ...)
//	                         counts no attempt: the relay stops claiming and probes Temporal instead.
//	OUTFLOW_RELAY_RATE       The most workflow starts a second (e.g. under a Temporal Cloud
//	                         namespace's quota); default none. Throttled starts slow the relay anyway.
//	OUTFLOW_FAILPOINTS       Fault injection, e.g. "relay.after_publish=crash" (see package failpoints);
//	                         a malformed value stops the process at start.
//	METRICS_ADDR             Serve Prometheus /metrics on this address (e.g. 127.0.0.1:9102); off when unset.
//	OUTFLOW_LOG_LEVEL        debug, info (default), warn or error.
//	OUTFLOW_CODEC_KEYS       Payload encryption: comma-separated KEY_ID:BASE64_32_BYTES, the first
//	                         encrypts, all decrypt (or OUTFLOW_CODEC_KEYS_FILE); unset: none
//	                         (docs/privacy.md).
//
// Retention cleanup (one pass per interval across all starters, by advisory lock;
// see outboxops.Cleanup and `outboxctl cleanup`):
//
//	OUTFLOW_RETENTION        Keep published events this long; default 168h (7 days); 0 disables.
//	                         The log source (`outboxctl source set log`) drops its log's range
//	                         partitions sealed longer ago than this, once no cursor, hold or
//	                         open writer needs them (outboxops.RetainLog).
//	OUTFLOW_INBOX_RETENTION  Keep processed_events rows this long, at least OUTFLOW_RETENTION; default the same.
//	OUTFLOW_CLEANUP_INTERVAL Time between passes; default 10m.
//	OUTFLOW_CLEANUP_BATCH    Rows per batch (one short transaction each); default 1000.
//	OUTFLOW_REPLAY_HORIZON   How far back `outboxctl replay` may reach; default (and at most) the
//	                         Temporal namespace's retention, read with DescribeNamespace. Replays of
//	                         older events are acknowledged without a start (docs/time-and-money.md).
//
// Tuning (defaults are those of outbox.RelayConfig):
//
//	OUTFLOW_RELAY_BATCH      Events per claim; default 100.
//	OUTFLOW_RELAY_LEASE      Claim lease, a Go duration; default 30s.
//	OUTFLOW_RELAY_POLL       Safety poll when no NOTIFY arrives; default 5s.
//	OUTFLOW_RELAY_IN_FLIGHT  Concurrent workflow starts (across orders); default 16.
//
// On start it logs one line, `relay started owner=... `, with its effective
// configuration. `starter -h` prints these variables with their defaults
// (command.go), `starter --version` the build; a malformed setting stops
// it at start with exit status 2 and a plain line for each.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/grpc"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/internal/temporalclient"
	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/temporalpub"
)

func main() { service.Main("starter", &command, "relay failed", run) }

func run(logger *slog.Logger, env *service.Env) error {
	// Every setting is read, and a malformed one refused (exit status 2,
	// plain lines), before the database or Temporal is dialled.
	fps, err := failpoints.Parse(os.Getenv(failpoints.EnvVar))
	if err != nil {
		env.Fail(fmt.Errorf("%s: %w", failpoints.EnvVar, err))
	}
	cfg := configFromEnv(env)
	source := sourceFromEnv(env)
	cdcSlot, cdcGrace := env.String(CDCSlotEnv, ""), env.Duration(CDCGraceEnv, 0, false)
	selected := sinksFromEnv(env)
	ns := natsSettingsFromEnv(env)
	taskQueue := service.TaskQueue(env)
	eventRoutes, routesFrom := routesFromEnv(env)
	ccfg := service.Retention(env)
	configuredHorizon := replayHorizonFromEnv(env)
	// The Temporal client's settings and the payload codec's keys, checked
	// here without the customer key store (which needs the database).
	if selected.has(sinkTemporal) {
		if _, err := temporalclient.ClientOptions(); err != nil {
			env.Fail(err)
		}
	} else if _, err := temporalclient.CodecDataConverter(); err != nil {
		env.Fail(cli.Config(err))
	}
	if err := env.Err(); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	pool, err := database.OpenCheckedOutbox(ctx, database.URL())
	if err != nil {
		return err
	}
	defer pool.Close()

	cfg.Logger = logger
	cfg.Failpoints = fps
	metricsAddr := os.Getenv(service.MetricsAddrEnv)
	var reg *prometheus.Registry
	var registerer prometheus.Registerer // a nil *Registry is not a nil interface
	if metricsAddr != "" {
		reg = service.NewRegistry()
		cfg.Registerer = reg
		registerer = reg
	}

	var (
		pubs       fanout
		startedLog []any
	)
	if selected.has(sinkTemporal) {
		tp, tlog, closeTemporal, err := newTemporalSink(ctx, pool, logger, taskQueue, eventRoutes, configuredHorizon, registerer)
		if err != nil {
			return err
		}
		defer closeTemporal()
		pubs = append(pubs, tp)
		startedLog = append(startedLog, tlog...)
		startedLog = append(startedLog, "routes", routesFrom)

		// The replay horizon is checked against the namespace retention
		// before the relay runs when Temporal answers now, and in the
		// background otherwise; a violation stops the relay.
		guard := &horizonGuard{pool: pool, pub: tp, namespace: tp.Namespace(), configured: configuredHorizon, logger: logger}
		if _, err := guard.check(ctx, 3*time.Second); err != nil {
			return err
		}
		var stopRelay context.CancelCauseFunc
		ctx, stopRelay = context.WithCancelCause(ctx)
		defer stopRelay(nil)
		go func() {
			if err := guard.run(ctx); err != nil {
				stopRelay(err)
			}
		}()
	}
	if selected.has(sinkJetStream) {
		enc, summary, err := streamEncoder(ctx, pool)
		if err != nil {
			return err
		}
		jp, nc, err := newJetStreamSink(ctx, ns, cfg, enc, fps, registerer, logger)
		if err != nil {
			return err
		}
		defer nc.Close()
		pubs = append(pubs, jp)
		startedLog = append(startedLog, "nats", ns.url, "stream", jp.Stream(), "subject_prefix", ns.prefix, "duplicate_window", jp.Window(),
			"stream_payload_codec", summary)
	}
	var pub outbox.Publisher = pubs
	if len(pubs) == 1 {
		pub = pubs[0]
	}
	if source != "" {
		if err := adoptEnvSource(ctx, pool, logger, source); err != nil {
			return err
		}
	}

	if reg != nil {
		srv, err := service.ServeMetrics(metricsAddr, reg, logger)
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}

	// Every pass also makes the log's ranges ahead of its sequence, even
	// when OUTFLOW_RETENTION=0 turns cleanup off (an enqueue past the last
	// range fails), whatever the recorded source: it may become the log
	// while the starter runs. On a log never written a pass makes and drops
	// nothing.
	ccfg.Failpoints, ccfg.Registerer, ccfg.Logger = fps, registerer, logger
	sched, err := outboxops.NewSchedule(pool, ccfg)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); sched.Run(cctx) }()
	defer func() { cancel(); <-done }()

	started := func(source string, eff outbox.RelayConfig) {
		logger.Info("relay started", append([]any{
			"owner", eff.Owner,
			"source", source,
			"sinks", selected.String()}, append(startedLog,
			"batch", eff.BatchSize, "lease", eff.Lease, "publish_timeout", eff.PublishTimeout,
			"poll", eff.PollInterval, "in_flight", eff.MaxInFlight, "max_attempts", eff.MaxAttempts,
			"metrics_addr", metricsAddr, "failpoints", os.Getenv(failpoints.EnvVar),
			"retention", ccfg.Retention, "cleanup_interval", ccfg.Interval, "replay_horizon", orDefault(os.Getenv("OUTFLOW_REPLAY_HORIZON"), "namespace retention"))...)...)
	}
	cfg.CDCSlot, cfg.CDCGrace, cfg.Started = cdcSlot, cdcGrace, started
	relay, err := outbox.NewRelay(pool, pub, cfg)
	if err != nil {
		return err
	}
	err = relay.Run(ctx)
	logger.Info("relay stopped")
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// configFromEnv reads the relay's tuning variables; unset means the
// outbox.RelayConfig default.
func configFromEnv(env *service.Env) outbox.RelayConfig {
	return outbox.RelayConfig{
		Rate:         env.PositiveFloat("OUTFLOW_RELAY_RATE", 0),
		MaxAttempts:  env.PositiveInt("OUTFLOW_MAX_ATTEMPTS", 0),
		BatchSize:    env.PositiveInt("OUTFLOW_RELAY_BATCH", 0),
		MaxInFlight:  env.PositiveInt("OUTFLOW_RELAY_IN_FLIGHT", 0),
		Lease:        env.Duration("OUTFLOW_RELAY_LEASE", 0, false),
		PollInterval: env.Duration("OUTFLOW_RELAY_POLL", 0, false),
	}
}

// newTemporalSink builds the Temporal sink's publisher over a lazy client
// (the relay starts while Temporal is unreachable and backs off), and the
// attributes of the start-up log line that describe it.
func newTemporalSink(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, taskQueue string, eventRoutes temporalpub.Routes,
	horizon time.Duration, reg prometheus.Registerer) (*temporalpub.Publisher, []any, func(), error) {
	// The payload codec (OUTFLOW_CODEC_KEYS) encrypts each OrderCreated
	// input with its customer's key from this database.
	topts, err := temporalclient.ClientOptions(temporalclient.WithCustomerKeys(pool))
	if err != nil {
		return nil, nil, nil, err
	}
	if err := temporalclient.CheckCustomerKeys(ctx, topts, pool); err != nil {
		return nil, nil, nil, err
	}
	topts.Logger = tlog.NewStructuredLogger(logger.With("component", "temporal-client"))
	// The SDK retries throttled starts itself; this tells the relay of each,
	// so that it slows down (outbox_sink_throttled_total).
	topts.ConnectionOptions.DialOptions = append(topts.ConnectionOptions.DialOptions,
		grpc.WithChainUnaryInterceptor(temporalpub.ThrottleInterceptor()))
	tc, err := client.NewLazyClient(topts)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("temporal client for %s: %w", topts.HostPort, err)
	}
	pub, err := temporalpub.New(tc, topts, temporalpub.Config{TaskQueue: taskQueue, Routes: eventRoutes, Logger: logger, ReplayHorizon: horizon, Registerer: reg})
	if err != nil {
		tc.Close()
		return nil, nil, nil, err
	}
	return pub, []any{"temporal", topts.HostPort, "namespace", pub.Namespace(), "task_queue", taskQueue,
		"payload_codec", temporalclient.CodecSummary(topts)}, tc.Close, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
