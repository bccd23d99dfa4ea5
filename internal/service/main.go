package service

import (
	"flag"
	"log/slog"
	"os"

	"github.com/outflow/outflow/internal/cli"
)

// Main is a service binary's main: it parses the command line with command
// (-h and -version exit 0, a bad command line 2), reads the environment
// and builds the logger, calls run, and exits with the status [cli.Exit]
// gives what run returned, logging a failure as failed ("relay failed").
func Main(name string, command *cli.Command, failed string, run func(*slog.Logger, *Env) error) {
	if err := command.Parse(flag.NewFlagSet(name, flag.ContinueOnError), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		os.Exit(cli.ExitCode(err))
	}
	env := NewEnv(os.Getenv)
	logger := NewLogger(os.Stderr, env)
	err := run(logger, env)
	os.Exit(cli.Exit(os.Stderr, name, err, func(err error) { logger.Error(failed, ErrorKey, err) }))
}
