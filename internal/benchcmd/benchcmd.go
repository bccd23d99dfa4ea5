// Package benchcmd is the command-line frame outflow's benchmarks (cmd/bench
// and the peers bench, bench/peers) share: flags, exit codes and Ctrl-C.
package benchcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main parses the command line with parse and runs run until it returns or
// the process gets SIGINT or SIGTERM. It exits 2 on a usage error, 1 when
// run fails, each with the error on stderr after name; -h prints the usage
// and exits 0.
func Main[C any](name string, parse func(args []string, stderr io.Writer) (C, error),
	run func(ctx context.Context, cfg C, stdout, stderr io.Writer) error) {
	cfg, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err = run(ctx, cfg, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Parse parses args with fs and refuses positional arguments: every
// benchmark takes flags only.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q; see -h", fs.Args())
	}
	return nil
}
