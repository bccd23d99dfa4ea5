// Command worker is outflow's Temporal worker: it runs the payment saga's
// workflows (OrderCreatedWorkflow, OrderCancelledWorkflow) and activities.
//
// Configuration (docs/reference.md): the Temporal client from the SDK's
// environment conventions (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
// TEMPORAL_API_KEY, TLS, via go.temporal.io/sdk/contrib/envconfig),
// OUTFLOW_TASK_QUEUE (default "orders"), DATABASE_URL, STRIPE_API_KEY /
// STRIPE_API_BASE, EMAIL_API_KEY / EMAIL_API_BASE / EMAIL_FROM,
// OUTFLOW_FAILPOINTS, METRICS_ADDR (Prometheus /metrics; off when unset),
// OUTFLOW_LOG_LEVEL and OUTFLOW_LOG_FORMAT (text or json), OUTFLOW_CODEC_KEYS
// or OUTFLOW_CODEC_KEYS_FILE (payload encryption; docs/privacy.md).
//
// SIGINT or SIGTERM stops it gracefully: no new tasks are polled and running
// activities get WorkerStopTimeout to finish.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/failpoints"
	"github.com/outflow/outflow/inbox"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/personal"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/workflows"
)

// stopTimeout is how long running activities may finish after a stop
// signal. A provider call lasts at most the HTTP timeout (20 s); one cut
// short is retried under the same idempotency key anyway.
const stopTimeout = 25 * time.Second

func main() {
	env := service.NewEnv(os.Getenv)
	logger := service.NewLogger(os.Stderr, env)
	slog.SetDefault(logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, logger, env); err != nil {
		logger.Error("worker failed", service.ErrorKey, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, logger *slog.Logger, env *service.Env) error {
	taskQueue := service.TaskQueue(env)
	if err := env.Err(); err != nil {
		return err
	}
	if err := workflows.CheckHorizons(); err != nil {
		return err
	}
	fps, err := failpoints.FromEnv()
	if err != nil {
		return fmt.Errorf("%w (check %s)", err, failpoints.EnvVar)
	}
	acts, err := activities.NewFromEnv()
	if err != nil {
		return err
	}
	pool, err := database.OpenChecked(ctx, database.URL())
	if err != nil {
		return err
	}
	defer pool.Close()

	reg := service.NewRegistry()

	// The payload codec (OUTFLOW_CODEC_KEYS) encrypts a customer's personal
	// data with the customer's key from this database (personal.Subject
	// knows which activity values carry it).
	opts, err := service.TemporalClientOptions(service.WithCustomerKeys(pool), service.WithPersonalData(personal.Subject))
	if err != nil {
		return err
	}
	if err := service.CheckCustomerKeys(ctx, opts, pool); err != nil {
		return err
	}
	opts.Logger = tlog.NewStructuredLogger(logger)
	opts.MetricsHandler = newPromHandler(reg)
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return fmt.Errorf("cannot reach Temporal at %q: %w (set TEMPORAL_ADDRESS, or start a dev server: bin/temporal server start-dev)", opts.HostPort, err)
	}
	defer c.Close()

	acts.DB = pool
	acts.Temporal = c
	acts.Metrics = activities.NewMetrics(reg)
	if acts.Inbox, err = inbox.New(reg); err != nil {
		return err
	}
	acts.Failpoints = fps

	w := worker.New(c, taskQueue, worker.Options{WorkerStopTimeout: stopTimeout})
	workflows.Register(w)
	w.RegisterActivity(acts)

	var metricsSrv *http.Server
	if addr := os.Getenv(service.MetricsAddrEnv); addr != "" {
		if metricsSrv, err = service.ServeMetrics(addr, reg, logger); err != nil {
			return err
		}
	}

	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the worker on task queue %s: %w", taskQueue, err)
	}
	fmt.Printf("worker started task_queue=%s\n", taskQueue)
	logger.Info("worker started", "task_queue", taskQueue, "namespace", opts.Namespace, "payload_codec", service.CodecSummary(opts))

	<-ctx.Done()
	logger.Info("stopping: finishing running activities", "timeout", stopTimeout)
	w.Stop()
	if metricsSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = metricsSrv.Shutdown(sctx)
	}
	logger.Info("worker stopped")
	return nil
}
