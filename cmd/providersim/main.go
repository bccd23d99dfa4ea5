// Command providersim serves the Stripe-compatible payment API and the
// Resend-compatible email API of package providersim, for make demo and for
// tests that run the providers as a separate process.
//
//	PROVIDERSIM_ADDR=127.0.0.1:0 go run ./cmd/providersim
//
// It logs (slog text unless OUTFLOW_LOG_FORMAT=json, on stderr; the level
// from OUTFLOW_LOG_LEVEL or -debug) the base URL it listens on, as
// "msg=listening url=http://127.0.0.1:NNNN", so a script started with port 0
// can find it; point STRIPE_API_BASE and EMAIL_API_BASE there. SIGINT or
// SIGTERM shuts it down gracefully. -h lists the flags and variables,
// --version prints the build; an unknown flag is exit status 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/internal/telemetry"
	"github.com/outflow/outflow/providersim"
)

// defaultAddr is the default (docs/reference.md) of PROVIDERSIM_ADDR.
const defaultAddr = "127.0.0.1:12111"

// command is what `providersim -h` shows.
var command = cli.Command{
	Name:    "providersim",
	Summary: "serves the Stripe-compatible payment API and the Resend-compatible email API simulators, until SIGINT or SIGTERM.",
	Env: cli.Vars(
		[]cli.Var{
			{Name: "PROVIDERSIM_ADDR", Default: defaultAddr, Meaning: "listen address, host:port (port 0 picks a free one); --addr overrides it"},
			{Name: "PROVIDERSIM_WEBHOOK_URL", Default: "none: no webhook is sent", Meaning: "where the simulator delivers its Stripe webhook events (the order API's http://HOST:PORT/webhooks/stripe)"},
			{Name: "STRIPE_WEBHOOK_SECRET", Default: "none", Meaning: "the signing secret (whsec_...) the webhooks are signed with, the order API's own; required with PROVIDERSIM_WEBHOOK_URL"},
		},
		service.LogVars(),
	),
	Notes: `It logs "msg=listening url=http://HOST:PORT" once it serves; point STRIPE_API_BASE and EMAIL_API_BASE there.`,
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Report(os.Stderr, "providersim", err))
}

// run serves until ctx ends. It is main without the process: tests call it
// with their own context, environment and writers (-h and --version answer
// on stdout, the log goes to logOut).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, logOut io.Writer) error {
	env := service.NewEnv(getenv)
	addr := env.String("PROVIDERSIM_ADDR", defaultAddr)
	webhookURL := env.String("PROVIDERSIM_WEBHOOK_URL", "")
	webhookSecret := env.String("STRIPE_WEBHOOK_SECRET", "")
	fs := flag.NewFlagSet("providersim", flag.ContinueOnError)
	fs.StringVar(&addr, "addr", addr, "listen address (env PROVIDERSIM_ADDR; port 0 picks a free port)")
	debug := fs.Bool("debug", false, "log every request the simulator executes")
	if err := command.Parse(fs, args, stdout, logOut); err != nil {
		return err
	}

	if *debug {
		// -debug is OUTFLOW_LOG_LEVEL=debug for this run.
		env = service.NewEnv(func(name string) string {
			if name == service.LogLevelEnv {
				return "debug"
			}
			return getenv(name)
		})
	}
	logger := service.NewLogger(logOut, env)
	if webhookURL != "" && webhookSecret == "" {
		env.Fail(errors.New("PROVIDERSIM_WEBHOOK_URL is set without STRIPE_WEBHOOK_SECRET: Stripe signs every webhook, set the endpoint's secret"))
	}
	if err := env.Err(); err != nil {
		return err
	}
	stopTracing, err := telemetry.Start(ctx, getenv, telemetry.ServiceProviderSim, logger)
	if err != nil {
		return cli.Config(err)
	}
	defer stopTracing()

	sim := providersim.New(providersim.Options{Logger: logger, WebhookURL: webhookURL, WebhookSecret: webhookSecret})
	url, err := sim.Start(addr)
	if err != nil {
		return fmt.Errorf("%w (set PROVIDERSIM_ADDR or --addr to a free address, or port 0)", err)
	}
	logger.Info("listening", "url", url,
		"stripe_api_base", url, "email_api_base", url, "ledger", url+"/_sim/ledger")

	<-ctx.Done()
	logger.Info("shutting down")
	if err := sim.Close(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}
