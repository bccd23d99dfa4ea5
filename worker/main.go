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
// `worker -h` lists every variable with its default; `worker --version`
// prints the build; a malformed setting stops it with exit status 2.
//
// SIGINT or SIGTERM stops it gracefully: no new tasks are polled and running
// activities get WorkerStopTimeout to finish.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/outflow/outflow/activities"
	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/personal"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/internal/telemetry"
	"github.com/outflow/outflow/internal/temporalclient"
	"github.com/outflow/outflow/outbox/cmdkit"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/inbox"
	"github.com/outflow/outflow/workflows"
)

// stopTimeout is how long running activities may finish after a stop
// signal. A provider call lasts at most the HTTP timeout (20 s); one cut
// short is retried under the same idempotency key anyway.
const stopTimeout = 25 * time.Second

// command is what `worker -h` shows: every variable the worker reads.
var command = cli.Command{
	Name:    "worker",
	Summary: "outflow's Temporal worker: runs the payment saga's workflows and activities, until SIGINT or SIGTERM.",
	Env: cli.Vars(
		[]cli.Var{service.DatabaseVar(database.DefaultURL, "the order app's database (inbox, projections, customer keys); its schema must be current (outboxctl migrate --order-app)")},
		temporalclient.Vars(),
		[]cli.Var{
			service.TaskQueueVar("the task queue polled"),
			{Name: "STRIPE_API_KEY", Default: "a placeholder when only STRIPE_API_BASE is set", Meaning: "the payment provider's secret key"},
			{Name: "STRIPE_API_BASE", Default: "the real Stripe API", Meaning: "the payment API's root, e.g. the simulator's http://127.0.0.1:12111"},
			{Name: "EMAIL_API_KEY", Default: "a placeholder when only EMAIL_API_BASE is set", Meaning: "the email provider's key (Resend-style API)"},
			{Name: "EMAIL_API_BASE", Default: "https://api.resend.com when EMAIL_API_KEY is set", Meaning: "the email API's root"},
			{Name: "EMAIL_FROM", Default: activities.DefaultEmailFrom, Meaning: "the sender of every email"},
			{Name: "INVENTORY_URL", Default: "none: the saga reserves no stock", Meaning: "the inventory service's API root, e.g. http://127.0.0.1:8090; set, the saga reserves stock before it charges and releases it on a decline or a cancel"},
			{Name: "INVENTORY_ANSWER_TIMEOUT", Default: activities.DefaultInventoryAnswerTimeout.String(), Meaning: "how long the saga waits for the inventory's answer signal before it fails the order and releases"},
			{Name: "PAYMENT_AUTHENTICATION_TIMEOUT", Default: activities.DefaultAuthenticationTimeout.String(), Meaning: "how long the saga waits for a customer to complete 3-D Secure (a charge that answered requires_action) before it cancels the PaymentIntent and fails the order"},
			service.MetricsVar(),
			service.FailpointsVar(),
		},
		temporalclient.CodecVars(),
		service.LogVars(),
	),
	Notes: "A malformed setting stops it at start (exit status 2). See docs/reference.md.",
}

func main() {
	service.Main("worker", &command, "worker failed", func(logger *slog.Logger, env *service.Env) error {
		slog.SetDefault(logger)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return run(ctx, logger, env)
	})
}

func run(ctx context.Context, logger *slog.Logger, env *service.Env) error {
	// Every setting is read, and a malformed one refused (exit status 2,
	// plain lines), before the database or Temporal is dialled.
	taskQueue := service.TaskQueue(env)
	fps, err := failpoints.Parse(os.Getenv(failpoints.EnvVar))
	if err != nil {
		env.Fail(fmt.Errorf("%w (check %s)", err, failpoints.EnvVar))
	}
	actsCfg := activities.ConfigFromEnv()
	actsCfg.InventoryURL = env.String("INVENTORY_URL", "")
	actsCfg.InventoryAnswerTimeout = env.Duration("INVENTORY_ANSWER_TIMEOUT", activities.DefaultInventoryAnswerTimeout, false)
	if telemetry.Enabled() { // the provider and inventory calls are spans of their activities'
		actsCfg.Transport = otelhttp.NewTransport(http.DefaultTransport)
	}
	actsCfg.AuthenticationTimeout = env.Duration("PAYMENT_AUTHENTICATION_TIMEOUT", activities.DefaultAuthenticationTimeout, false)
	if u := actsCfg.InventoryURL; u != "" {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			env.Fail(fmt.Errorf("INVENTORY_URL=%q: want an http(s) URL such as http://127.0.0.1:8090", u))
		}
	}
	acts, err := activities.New(actsCfg)
	if err != nil {
		env.Fail(err)
	}
	if _, err := temporalclient.ClientOptions(temporalclient.WithPersonalData(personal.Subject)); err != nil {
		env.Fail(err)
	}
	if err := env.Err(); err != nil {
		return err
	}
	if err := workflows.CheckHorizons(); err != nil {
		return err
	}
	pool, err := database.OpenChecked(ctx, database.URL())
	if err != nil {
		return err
	}
	defer pool.Close()

	reg := cmdkit.NewRegistry()

	// The payload codec (OUTFLOW_CODEC_KEYS) encrypts a customer's personal
	// data with the customer's key from this database (personal.Subject
	// knows which activity values carry it).
	opts, err := temporalclient.ClientOptions(temporalclient.WithCustomerKeys(pool), temporalclient.WithPersonalData(personal.Subject))
	if err != nil {
		return err
	}
	if err := temporalclient.CheckCustomerKeys(ctx, opts, pool); err != nil {
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
	if acts.Metrics, err = activities.NewMetrics(reg); err != nil {
		return err
	}
	if acts.Inbox, err = inbox.New(reg); err != nil {
		return err
	}
	acts.Failpoints = fps

	w := worker.New(c, taskQueue, worker.Options{WorkerStopTimeout: stopTimeout})
	workflows.Register(w)
	w.RegisterActivity(acts)

	var metricsSrv *http.Server
	if addr := os.Getenv(service.MetricsAddrEnv); addr != "" {
		if metricsSrv, err = cmdkit.ServeMetrics(addr, reg, logger); err != nil {
			return fmt.Errorf("%s=%s: %w", service.MetricsAddrEnv, addr, err)
		}
	}

	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the worker on task queue %s: %w", taskQueue, err)
	}
	fmt.Printf("worker started task_queue=%s\n", taskQueue)
	logger.Info("worker started", "task_queue", taskQueue, "namespace", opts.Namespace, "payload_codec", temporalclient.CodecSummary(opts))

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
