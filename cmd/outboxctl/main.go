// Command outboxctl is outflow's operator CLI.
//
//	outboxctl migrate [--order-app | --outbox-only]    bring DATABASE_URL's outbox (and order app) to the newest schema
//	outboxctl status [--json]                           backlog, quarantine, leases, throughput
//	outboxctl list [--pending | --quarantined] [--aggregate ID] [--aggregate-type TYPE] [--limit N] [--json]
//	outboxctl show EVENT_ID [--json]                    one event: every column, the whole last error, its workflow runs
//	outboxctl retry EVENT_ID [--yes]                    a quarantined or backing-off event: available now, attempts reset
//	outboxctl retry --quarantined [--since TIME] [--error-contains TEXT] [--aggregate-type TYPE] [--yes]
//	                                                    every quarantined event selected, in audited batches
//	outboxctl skip EVENT_ID --reason TEXT [--actor NAME] [--yes]
//	outboxctl replay --from TIME [--to TIME] [--aggregate ID] [--aggregate-type TYPE] [--yes]
//	outboxctl cleanup --retention DURATION [--batch-size N] [--inbox-retention DURATION] [--yes]
//	outboxctl forget-customer EMAIL --reason TEXT [--actor NAME] [--wait DURATION | --force] [--yes]
//	outboxctl help [COMMAND]
//	outboxctl -h | --version | version
//
// TIME is RFC 3339 or a Go duration before now (2h). Every command that
// changes data prints its plan, then acts with --yes, asks at a terminal,
// and otherwise is a dry run that changes nothing (exit 0).
//
// status, list --quarantined, show, retry, skip and replay --aggregate cover
// the log relay source's outbox_log too (its state, its quarantined holds,
// an event id found in either table).
//
// status, list, retry, skip, replay and cleanup concern the outbox alone:
// they work on any service's outbox, also in a database without the order
// app's tables, and assume no aggregate type where one filters. The order
// app's parts say so: forget-customer needs its tables, skip settles an
// order's projection only for an event of aggregate type order where the
// orders table exists, and migrate applies outflow's whole schema.
//
// Every command reads DATABASE_URL (pgx/v5 syntax), defaulting to the local
// server; --database-url overrides it. Every command but migrate refuses a
// database whose schema is outdated: the outbox's, and the order app's where
// the database has it, so the commands also serve a service's own database
// (`migrate` gives it the outbox alone). Every write is logged to stderr with who
// ran it ($USER@hostname unless --actor says otherwise). A connection
// string is shown with its password masked (help, logs, errors).
//
// Exit status: 0 success, 1 the command failed (unknown event, wrong state,
// database error), 2 usage (unknown command, bad flag or argument,
// malformed setting).
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
	"syscall"

	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/internal/cli"
	"github.com/outflow/outflow/internal/database"
	"github.com/outflow/outflow/internal/service"
	"github.com/outflow/outflow/internal/temporalclient"
	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/outboxops"
)

// command is one outboxctl subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, env *cliEnv, args []string) error
}

// cliEnv is what every subcommand gets: where to read and write, how to log,
// and who is running it.
type cliEnv struct {
	stdout, stderr io.Writer
	logger         *slog.Logger
	databaseURL    string
	// stdin and interactive serve confirmation prompts; interactive is true
	// only when stdin is a terminal.
	stdin       io.Reader
	interactive bool
	// actor is recorded with every write: $USER@hostname.
	actor string
	// environ, when not nil, is the environment the Temporal client's
	// settings are read from instead of the process's (tests).
	environ []string
	// failpoints are OUTFLOW_FAILPOINTS's (cleanup.mid_batch).
	failpoints *failpoints.Set
}

// temporalOptions loads the Temporal client's options (TEMPORAL_*, the
// payload codec's keys) for the commands that ask Temporal.
func (env *cliEnv) temporalOptions() (client.Options, error) {
	if env.environ != nil {
		return temporalclient.ClientOptions(temporalclient.WithEnviron(env.environ))
	}
	return temporalclient.ClientOptions()
}

var commands map[string]command

func init() {
	// Assigned in init: help refers to the table.
	commands = map[string]command{
		"migrate":         {summary: "apply the outbox's pending migrations to DATABASE_URL (and the order app's where installed, or with --order-app)", run: runMigrate},
		"status":          {summary: "pending, oldest pending age, quarantined, leases by relay, recent throughput", run: runStatus},
		"list":            {summary: "list events, one a line, the event id first; --json: one JSON array", run: runList},
		"show":            {summary: "one event: every column, the whole last error, and its workflow runs in Temporal", run: runShow},
		"retry":           {summary: "make a quarantined or backing-off event available now, attempts reset; --quarantined: every one a filter selects", run: runRetry},
		"skip":            {summary: "give up a quarantined event (with a reason) so its aggregate flows again; settles an order of the order app too", run: runSkip},
		"replay":          {summary: "deliver published events of a time window again", run: runReplay},
		"source":          {summary: "print the relay source recorded in the database; `source set poll|cdc|log` changes it while everything runs", run: runSource},
		"cleanup":         {summary: "delete old published events and inbox rows in bounded batches, and the log's partitions no longer needed", run: runCleanup},
		"forget-customer": {summary: "order app only: erase one customer's data key: their Temporal histories become unreadable (audited)", run: runForgetCustomer},
		"help":            {summary: "list the commands, or show one command's flags", run: runHelp},
		"version":         {summary: "print the version, the VCS revision and the Go version (as --version)", run: runVersion},
	}
}

// errUsage asks main to exit 2; the message was already printed.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// environment is what `outboxctl -h` lists.
var environment = cli.Vars(
	[]cli.Var{
		service.DatabaseVar(database.DefaultURL, "the outbox (and the order app's tables where it has them); --database-url overrides it"),
		{Name: "OUTFLOW_CDC_SLOT", Default: outboxops.CDCSlotDefault, Meaning: "status: the cdc relay source's replication slot to report on"},
	},
	temporalclient.Vars(), // show and forget-customer ask Temporal about an event's workflow
	temporalclient.CodecVars(),
	service.LogVars(),
	[]cli.Var{{Name: "USER", Meaning: "who runs the command, recorded with every write as $USER@hostname unless --actor says otherwise"}},
	[]cli.Var{service.FailpointsVar()},
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runIn(ctx, args, stdout, stderr, nil)
}

// runIn is run with the Temporal client's settings read from environ (nil:
// the process environment).
func runIn(ctx context.Context, args []string, stdout, stderr io.Writer, environ []string) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "-version", "--version":
		fmt.Fprint(stdout, cli.Version("outboxctl"))
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "outboxctl: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	senv := service.NewEnv(os.Getenv)
	logger := service.NewLogger(stderr, senv)
	if err := senv.Err(); err != nil {
		fmt.Fprintf(stderr, "outboxctl: %v\n", err)
		return 2
	}
	fps, err := failpoints.Parse(os.Getenv(failpoints.EnvVar))
	if err != nil {
		fmt.Fprintf(stderr, "outboxctl: %s: %v\n", failpoints.EnvVar, err)
		return 2
	}
	env := &cliEnv{
		failpoints:  fps,
		stdout:      stdout,
		stderr:      stderr,
		logger:      logger,
		databaseURL: databaseURL(),
		stdin:       os.Stdin,
		interactive: isTerminal(os.Stdin),
		actor:       defaultActor(),
		environ:     environ,
	}
	if err := cmd.run(ctx, env, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if errors.Is(err, errUsage) {
			return 2
		}
		fmt.Fprintf(stderr, "outboxctl %s: %v\n", args[0], err)
		if cli.IsUsage(err) { // a malformed setting
			return 2
		}
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
		fmt.Fprintf(w, "  %-15s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\n`outboxctl help COMMAND` (or `outboxctl COMMAND -h`) shows a command's flags;")
	fmt.Fprintln(w, "`outboxctl --version` the module version and VCS revision.")
	fmt.Fprintln(w, "\nenvironment:")
	cli.PrintVars(w, environment)
	fmt.Fprintln(w, "show and forget-customer reach Temporal through the TEMPORAL_* variables.")
	fmt.Fprintln(w, "\nCommands that change data print their plan, then act with --yes, ask at a terminal, and otherwise")
	fmt.Fprintln(w, "are a dry run that changes nothing (exit 0). TIME is RFC 3339 or a duration before now (2h).")
	fmt.Fprintln(w, "\nexit status: 0 success, 1 the command failed, 2 usage (unknown command, bad flag or argument, malformed setting).")
}

// runHelp lists the commands, or shows one command's usage.
func runHelp(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		usage(env.stdout)
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(env.stderr, "outboxctl help: unknown command %q\n\n", args[0])
		usage(env.stderr)
		return errUsage
	}
	help := *env
	help.stderr = env.stdout
	return cmd.run(ctx, &help, []string{"-h"})
}

// runVersion prints what --version prints.
func runVersion(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet(env, "version", "version")
	pos, err := parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef(fs, "version takes no arguments, got %q", pos)
	}
	fmt.Fprint(env.stdout, cli.Version("outboxctl"))
	return nil
}

// defaultActor is who runs the command, as recorded with skips and logged
// with every write: $USER@hostname.
func defaultActor() string {
	user := os.Getenv("USER")
	if user == "" {
		user = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return user + "@" + host
}
