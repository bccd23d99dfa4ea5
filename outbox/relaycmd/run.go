package relaycmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/grpc"

	"github.com/outflow/outflow/outbox"
	"github.com/outflow/outflow/outbox/cmdkit"
	"github.com/outflow/outflow/outbox/ctl"
	"github.com/outflow/outflow/outbox/outboxops"
	"github.com/outflow/outflow/outbox/temporalpub"
)

// Hooks are how a binary adds to the library's starter what only it
// knows: its Temporal client's payload codec, sinks besides Temporal. All
// fields optional; the zero Hooks run the library's starter.
type Hooks struct {
	// OpenDB opens the database and refuses an outdated schema.
	// Defaulted to ctl.OpenOutbox.
	OpenDB func(ctx context.Context, url string) (*pgxpool.Pool, error)
	// NoTemporal turns the Temporal sink off (a binary whose settings
	// send events elsewhere only); the Temporal client is then not made.
	NoTemporal bool
	// TemporalOptions returns the Temporal client's options, given the
	// relay's database (a payload codec's key store), and attributes the
	// start-up line adds. Defaulted to [TemporalOptions] of the
	// environment [Run] was given.
	TemporalOptions func(ctx context.Context, pool *pgxpool.Pool) (client.Options, []any, error)
	// Sinks returns the publishers each event goes to after Temporal (or
	// alone with NoTemporal), in order, attributes for the start-up line,
	// and what to close after the relay stopped (may be nil). An event is
	// marked once every sink acknowledged it ([Fanout]).
	Sinks func(ctx context.Context, pool *pgxpool.Pool, reg prometheus.Registerer) ([]outbox.Publisher, []any, func(), error)
	// SinkNames is the start-up line's "sinks". Defaulted to "temporal".
	SinkNames string
}

// Run runs the relay of c until ctx ends: it opens the database, records
// the deprecated source, builds the sinks, serves metrics, runs the
// cleanup schedule and the replay horizon's guard, and logs one line
// `relay started` with its effective configuration. getenv is what
// [TemporalOptions] reads when h.TemporalOptions is nil.
func Run(ctx context.Context, logger *slog.Logger, c Config, h Hooks, getenv func(string) string, environ []string) error {
	openDB := h.OpenDB
	if openDB == nil {
		openDB = ctl.OpenOutbox
	}
	pool, err := openDB(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()

	cfg := c.Relay
	cfg.Logger = logger
	var reg *prometheus.Registry
	var registerer prometheus.Registerer // a nil *Registry is not a nil interface
	if c.MetricsAddr != "" {
		reg = cmdkit.NewRegistry()
		cfg.Registerer = reg
		registerer = reg
	}

	var (
		pubs       Fanout
		startedLog []any
	)
	if !h.NoTemporal {
		opts := h.TemporalOptions
		if opts == nil {
			opts = func(context.Context, *pgxpool.Pool) (client.Options, []any, error) {
				o, err := TemporalOptions(getenv, environ)
				return o, nil, err
			}
		}
		tp, attrs, closeTemporal, err := newTemporalSink(ctx, pool, logger, opts, c, registerer)
		if err != nil {
			return err
		}
		defer closeTemporal()
		pubs = append(pubs, tp)
		startedLog = append(startedLog, attrs...)
		startedLog = append(startedLog, "routes", c.RoutesFrom)

		// The replay horizon is checked against the namespace retention
		// before the relay runs when Temporal answers now, and in the
		// background otherwise; a violation stops the relay.
		guard := &horizonGuard{pool: pool, pub: tp, namespace: tp.Namespace(), configured: c.ReplayHorizon, logger: logger}
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
	if h.Sinks != nil {
		more, attrs, closeSinks, err := h.Sinks(ctx, pool, registerer)
		if err != nil {
			return err
		}
		if closeSinks != nil {
			defer closeSinks()
		}
		pubs = append(pubs, more...)
		startedLog = append(startedLog, attrs...)
	}
	if len(pubs) == 0 {
		return errors.New("no sink: the starter has nowhere to publish events")
	}
	var pub outbox.Publisher = pubs
	if len(pubs) == 1 {
		pub = pubs[0]
	}
	if c.Source != "" {
		if err := adoptEnvSource(ctx, pool, logger, c.Source); err != nil {
			return err
		}
	}

	if reg != nil {
		srv, err := cmdkit.ServeMetrics(c.MetricsAddr, reg, logger)
		if err != nil {
			return fmt.Errorf("%s=%s: %w", MetricsAddrEnv, c.MetricsAddr, err)
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
	ccfg := c.Cleanup
	ccfg.Failpoints, ccfg.Registerer, ccfg.Logger = cfg.Failpoints, registerer, logger
	sched, err := outboxops.NewSchedule(pool, ccfg)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); sched.Run(cctx) }()
	defer func() { cancel(); <-done }()

	sinkNames := h.SinkNames
	if sinkNames == "" {
		sinkNames = "temporal"
	}
	horizon := cmp.Or(getenv(ReplayHorizonEnv), "namespace retention")
	cfg.Started = func(source string, eff outbox.RelayConfig) {
		logger.Info("relay started", append([]any{
			"owner", eff.Owner,
			"source", source,
			"sinks", sinkNames}, append(startedLog,
			"batch", eff.BatchSize, "lease", eff.Lease, "publish_timeout", eff.PublishTimeout,
			"poll", eff.PollInterval, "in_flight", eff.MaxInFlight, "max_attempts", eff.MaxAttempts,
			"metrics_addr", c.MetricsAddr, "failpoints", c.FailpointsSpec,
			"retention", ccfg.Retention, "cleanup_interval", ccfg.Interval, "replay_horizon", horizon)...)...)
	}
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

// newTemporalSink builds the Temporal sink's publisher over a lazy client
// (the relay starts while Temporal is unreachable and backs off), and the
// attributes of the start-up log line that describe it.
func newTemporalSink(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger,
	options func(context.Context, *pgxpool.Pool) (client.Options, []any, error), c Config, reg prometheus.Registerer) (*temporalpub.Publisher, []any, func(), error) {
	topts, attrs, err := options(ctx, pool)
	if err != nil {
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
	pub, err := temporalpub.New(tc, topts, temporalpub.Config{TaskQueue: c.TaskQueue, Routes: c.Routes, Logger: logger, ReplayHorizon: c.ReplayHorizon, Registerer: reg})
	if err != nil {
		tc.Close()
		return nil, nil, nil, err
	}
	return pub, append([]any{"temporal", topts.HostPort, "namespace", pub.Namespace(), "task_queue", c.TaskQueue}, attrs...), tc.Close, nil
}
