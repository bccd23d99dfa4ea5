package service

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"time"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/telemetry"
)

// Main is a service binary's main: it parses the command line with command
// (-h and -version exit 0, a bad command line 2), reads the environment
// and builds the logger, turns tracing on when the standard OTEL_*
// variables name an endpoint (telemetry.Setup, service name
// "outflow-"+name unless OTEL_SERVICE_NAME), calls run, and exits with the status [cli.Exit]
// gives what run returned, logging a failure as failed ("relay failed").
func Main(name string, command *cli.Command, failed string, run func(*slog.Logger, *Env) error) {
	if err := command.Parse(flag.NewFlagSet(name, flag.ContinueOnError), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		os.Exit(cli.ExitCode(err))
	}
	env := NewEnv(os.Getenv)
	logger := NewLogger(os.Stderr, env)
	shutdown, err := telemetry.Setup(context.Background(), os.Getenv, "outflow-"+name)
	if err != nil {
		err = cli.Config(err)
	} else {
		err = run(logger, env)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if serr := shutdown(ctx); serr != nil {
			logger.Warn("tracing: flushing the last spans failed", ErrorKey, serr)
		}
		cancel()
	}
	os.Exit(cli.Exit(os.Stderr, name, err, func(err error) { logger.Error(failed, ErrorKey, err) }))
}
