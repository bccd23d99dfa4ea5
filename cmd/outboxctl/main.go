// Command outboxctl is outflow's operator CLI.
//
//	outboxctl migrate            bring DATABASE_URL to the newest schema
//
// Every command reads DATABASE_URL (pgx/v5 syntax), defaulting to the local
// server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one outboxctl subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) error
}

// cliEnv is what every subcommand gets: where to write and how to log.
type cliEnv struct {
	stdout, stderr io.Writer
	logger         *slog.Logger
	databaseURL    string
}

var commands = map[string]command{
	"migrate": {summary: "apply every pending schema migration to DATABASE_URL", run: runMigrate},
}

// errUsage asks main to print usage and exit 2.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "outboxctl: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	env := &cliEnv{
		stdout:      stdout,
		stderr:      stderr,
		logger:      slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})),
		databaseURL: databaseURL(),
	}
	if err := cmd.run(ctx, env, args[1:]); err != nil {
		if errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
			return 2
		}
		fmt.Fprintf(stderr, "outboxctl %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: outboxctl <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nenvironment: DATABASE_URL (default "+strings.TrimSpace(defaultURLHint)+")")
}
