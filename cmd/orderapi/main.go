// Command orderapi is outflow's order service: the HTTP API of docs/reference.md in
// front of the orders package. It commits each order change together with
// its outbox event; the relay (go run ./starter) hands the events to
// Temporal.
//
// Configuration (environment):
//
//	DATABASE_URL        PostgreSQL, pgx/v5 syntax (default: local postgres)
//	ORDERAPI_ADDR       listen address (default 127.0.0.1:8080; port 0 picks a free one)
//	ORDERAPI_TOKEN      when set, /orders routes require Authorization: Bearer <token>
//	OUTFLOW_LOG_LEVEL   debug, info (default), warn or error
//	OUTFLOW_LOG_FORMAT  text (default) or json; ORDERAPI_LOG_FORMAT is its older name, still read
//	OUTFLOW_FAILPOINTS  fault injection for tests, e.g. orders.after_commit=crash
//
// Its events go where the database's relay source says (outbox.Enqueue
// reads it; `outboxctl source set` changes it). At start it logs `listening addr=HOST:PORT` with the address actually
// bound, which is what tests that pass port 0 read. `orderapi -h` lists the
// variables, `orderapi --version` prints the build; an unknown flag or a
// malformed setting is exit status 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/internal/telemetry"
	"github.com/outflow/outflow/orders/orderhttp"
	"github.com/outflow/outflow/outbox/failpoints"
)

// AddrDefault is ORDERAPI_ADDR's default.
const AddrDefault = "127.0.0.1:8080"

// config is orderapi's environment.
type config struct {
	addr  string
	token string
	// webhookSecret verifies POST /webhooks/stripe (STRIPE_WEBHOOK_SECRET).
	webhookSecret string
}

func configFromEnv(env *service.Env) config {
	c := config{
		addr:  env.String("ORDERAPI_ADDR", AddrDefault),
		token: env.String("ORDERAPI_TOKEN", ""),

		webhookSecret: env.String("STRIPE_WEBHOOK_SECRET", ""),
	}
	if _, _, err := net.SplitHostPort(c.addr); err != nil {
		env.Fail(fmt.Errorf("ORDERAPI_ADDR=%q: want host:port, e.g. %s: %v", c.addr, AddrDefault, err))
	}
	return c
}

// getenv is os.Getenv, with ORDERAPI_LOG_FORMAT, the older name of
// OUTFLOW_LOG_FORMAT, still honoured when the new one is unset.
func getenv(name string) string {
	if v := os.Getenv(name); v != "" || name != service.LogFormatEnv {
		return v
	}
	return os.Getenv("ORDERAPI_LOG_FORMAT")
}

// command is what `orderapi -h` shows: every variable it reads.
var command = cli.Command{
	Name:    "orderapi",
	Summary: "outflow's order service: the HTTP API that commits each order change with its outbox event, until SIGINT or SIGTERM.",
	Env: cli.Vars(
		[]cli.Var{
			service.DatabaseVar(database.DefaultURL, "the order app's database; its schema must be current (outboxctl migrate --order-app)"),
			{Name: "ORDERAPI_ADDR", Default: AddrDefault, Meaning: "listen address, host:port (port 0 picks a free one)"},
			{Name: "ORDERAPI_TOKEN", Default: "none: unauthenticated", Meaning: "when set, /orders routes require Authorization: Bearer <token>"},
			{Name: "STRIPE_WEBHOOK_SECRET", Default: "none: POST /webhooks/stripe answers 503", Meaning: "the webhook endpoint's signing secret (whsec_...) every Stripe event is verified with"},
			service.FailpointsVar(),
		},
		service.LogVars(),
		[]cli.Var{{Name: "ORDERAPI_LOG_FORMAT", Meaning: "the older name of OUTFLOW_LOG_FORMAT, read when that is unset"}},
	),
	Notes: "A malformed setting stops it before it serves (exit status 2). See docs/reference.md for the HTTP API.",
}

func main() {
	err := run(os.Args[1:])
	os.Exit(cli.Report(os.Stderr, "orderapi", err))
}

func run(args []string) error {
	if err := command.Parse(flag.NewFlagSet("orderapi", flag.ContinueOnError), args, os.Stdout, os.Stderr); err != nil {
		return err
	}
	env := service.NewEnv(getenv)
	logger := service.NewLogger(os.Stderr, env)
	cfg := configFromEnv(env)
	// A malformed OUTFLOW_FAILPOINTS stops the binary before it serves: a
	// typo must not silently test nothing.
	fps, err := failpoints.Parse(os.Getenv(failpoints.EnvVar))
	if err != nil {
		env.Fail(fmt.Errorf("%s=%q: %w", failpoints.EnvVar, os.Getenv(failpoints.EnvVar), err))
	}
	if err := env.Err(); err != nil {
		return err
	}
	slog.SetDefault(logger)
	if spec := os.Getenv(failpoints.EnvVar); spec != "" {
		logger.Warn("failpoints enabled", "spec", spec)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Tracing (the standard OTEL_* variables; off without an endpoint): a
	// request's span is the parent of the order's outbox event, and so of
	// the workflow it starts.
	stopTracing, err := telemetry.Start(ctx, os.Getenv, telemetry.ServiceOrderAPI, logger)
	if err != nil {
		return cli.Config(err)
	}
	defer stopTracing()

	pool, err := database.OpenChecked(ctx, database.URL())
	if err != nil {
		return err
	}
	defer pool.Close()

	handler, err := orderhttp.New(orderhttp.Config{DB: pool, Token: cfg.token, Logger: logger, Failpoints: fps,
		StripeWebhookSecret: cfg.webhookSecret})
	if err != nil {
		return err
	}
	if cfg.token == "" {
		logger.Warn("ORDERAPI_TOKEN is not set: the API accepts unauthenticated requests")
	}

	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on ORDERAPI_ADDR=%s: %w", cfg.addr, err)
	}
	if telemetry.Enabled() {
		handler = otelhttp.NewHandler(handler, "orderapi")
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	logger.Info("listening", "addr", ln.Addr().String())

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	stop() // a second signal kills the process the default way
	logger.Info("shutting down: draining requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped")
	return nil
}
