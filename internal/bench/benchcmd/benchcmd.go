// Package benchcmd is the command-line frame outflow's benchmarks (cmd/bench
// and the peers bench, bench/peers) share: flags, exit codes and Ctrl-C, on
// top of package cli (-h with the environment, --version).
package benchcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/outflow/outflow/internal/cli"
)

// Main parses the command line with parse and runs run until it returns or
// the process gets SIGINT or SIGTERM. It exits 2 on a usage error, 1 when
// run fails, each with the error on stderr after name; -h prints the help
// (and --version the build) on stdout and exits 0.
func Main[C any](name string, parse func(args []string, stdout, stderr io.Writer) (C, error),
	run func(ctx context.Context, cfg C, stdout, stderr io.Writer) error) {
	cfg, err := parse(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		if !cli.IsUsage(err) && !errors.Is(err, cli.ErrHandled) {
			err = &cli.UsageError{Err: err} // a flag's value the benchmark refuses
		}
		os.Exit(cli.Report(os.Stderr, name, err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err = run(ctx, cfg, os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.Report(os.Stderr, name, err))
}

// Parse parses args with fs through cmd (-h, --version, a bad flag: see
// cli.Command.Parse) and refuses positional arguments: every benchmark
// takes flags only.
func Parse(cmd *cli.Command, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	return cmd.Parse(fs, args, stdout, stderr)
}

// StartCPUProfile writes this process's CPU profile (go tool pprof) to path
// until the returned stop: a benchmark's -cpuprofile.
func StartCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
