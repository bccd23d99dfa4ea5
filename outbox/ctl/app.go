package ctl

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/outflow/outflow/outbox/failpoints"
	"github.com/outflow/outflow/outbox/outboxops"
)

// Command is one outboxctl subcommand.
type Command struct {
	// Summary is its line in `outboxctl -h`.
	Summary string
	// Run runs it with the arguments after its name. It returns
	// flag.ErrHelp after printing its help, [ErrUsage] after printing a
	// usage error (exit status 2), any other error to be printed (exit
	// status 1).
	Run func(ctx context.Context, env *Env, args []string) error
}

// App is an outboxctl: its command table and the hooks by which a binary
// adds what its own database holds. The zero hooks are the library's own:
// the outbox alone.
type App struct {
	// Commands is the command table, by name. Mandatory: start from
	// [Commands] and add or replace entries.
	Commands map[string]Command
	// Version is what --version prints. Optional: defaulted to [Version].
	Version func() string
	// Environment writes the environment variables -h lists. Optional:
	// defaulted to the library's ([Vars]).
	Environment func(w io.Writer)
	// NewLogger returns the logger of writes and progress, writing to w.
	// Optional: defaulted to slog on w, at OUTFLOW_LOG_LEVEL in
	// OUTFLOW_LOG_FORMAT read through getenv.
	NewLogger func(w io.Writer, getenv func(string) string) (*slog.Logger, error)
	// OpenDB opens the database and refuses an outdated schema. Optional:
	// defaulted to [OpenOutbox].
	OpenDB func(ctx context.Context, url string) (*pgxpool.Pool, error)
	// TemporalOptions are the Temporal client's options, for show.
	// Optional: defaulted to TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE read
	// through getenv.
	TemporalOptions func(getenv func(string) string) (client.Options, error)
	// SettleSkipTx, when set, runs in skip's transaction after the skip
	// (never for a replay's redelivery) and returns what it settled, a
	// line for the plan and the output ("" for nothing): what a skipped
	// event means to its consumers commits with the skip. An error undoes
	// the skip. Optional.
	SettleSkipTx func(ctx context.Context, tx pgx.Tx, c outboxops.Change) (string, error)
	// SkipNote is added to skip's -h, saying what SettleSkipTx does.
	SkipNote string
	// Personal, when set, tells serve's console which payloads hold
	// personal data ([ConsoleOptions.Personal]). Optional.
	Personal func(eventType string, payload []byte) bool
	// Notes are lines added to -h after the environment.
	Notes string
}

// Process is what main hands [App.Run]: the process's streams and
// environment. The package reads nothing else of the process.
type Process struct {
	Stdout, Stderr io.Writer
	// Stdin answers confirmation prompts; Interactive says it is a
	// terminal (see [IsTerminal]).
	Stdin       io.Reader
	Interactive bool
	// Getenv reads the environment (os.Getenv).
	Getenv func(string) string
	// Hostname is recorded with the actor of every write (os.Hostname).
	Hostname string
}

// Env is what every subcommand gets: where to read and write, how to log,
// and who is running it.
type Env struct {
	Stdout, Stderr io.Writer
	Logger         *slog.Logger
	// DatabaseURL is DATABASE_URL, or --database-url.
	DatabaseURL string
	// Stdin and Interactive serve confirmation prompts; Interactive is
	// true only when Stdin is a terminal.
	Stdin       io.Reader
	Interactive bool
	// Actor is recorded with every write: $USER@hostname.
	Actor string
	// Failpoints are OUTFLOW_FAILPOINTS's (cleanup.mid_batch).
	Failpoints *failpoints.Set
	// Getenv reads the environment; nil reads nothing.
	Getenv func(string) string

	app *App
}

func (env *Env) getenv(name string) string {
	if env.Getenv == nil {
		return ""
	}
	return env.Getenv(name)
}

// TemporalOptions loads the Temporal client's options ([App.TemporalOptions])
// for the commands that ask Temporal.
func (env *Env) TemporalOptions() (client.Options, error) {
	if env.app != nil && env.app.TemporalOptions != nil {
		return env.app.TemporalOptions(env.getenv)
	}
	return temporalOptions(env.getenv)
}

// ErrUsage is a usage error already printed with the command's usage
// (exit status 2).
var ErrUsage = errors.New("usage")

// ConfigError is a malformed setting (exit status 2), from a hook such as
// [App.TemporalOptions].
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Commands returns the library's command table: the commands over the
// outbox alone, and help and version.
func Commands() map[string]Command {
	return map[string]Command{
		"migrate": {Summary: "apply the outbox's pending migrations to DATABASE_URL", Run: runMigrate},
		"status":  {Summary: "pending, oldest pending age, quarantined, leases by relay, recent throughput", Run: runStatus},
		"list":    {Summary: "list events, one a line, the event id first; --json: one JSON array", Run: runList},
		"show":    {Summary: "one event: every column, the whole last error, and its workflow runs in Temporal", Run: runShow},
		"retry":   {Summary: "make a quarantined or backing-off event available now, attempts reset; --quarantined: every one a filter selects", Run: runRetry},
		"skip":    {Summary: "give up a quarantined event (with a reason) so its aggregate flows again", Run: runSkip},
		"replay":  {Summary: "deliver published events of a time window again", Run: runReplay},
		"serve":   {Summary: "serve the outbox's web page on " + ConsoleAddrVar + ": overview, lists, one event; actions with " + ConsoleTokenVar, Run: runServe},
		"source":  {Summary: "print the relay source recorded in the database; `source set poll|cdc|log` changes it while everything runs", Run: runSource},
		"cleanup": {Summary: "delete old published events and inbox rows in bounded batches, and the log's partitions no longer needed", Run: runCleanup},
		"help":    {Summary: "list the commands, or show one command's flags", Run: runHelp},
		"version": {Summary: "print the version, the VCS revision and the Go version (as --version)", Run: runVersion},
	}
}

// Run runs the command args names and returns the exit status: 0 success,
// 1 the command failed, 2 usage (unknown command, bad flag or argument,
// malformed setting).
func (a *App) Run(ctx context.Context, args []string, p Process) int {
	if len(args) == 0 {
		a.usage(p.Stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		a.usage(p.Stdout)
		return 0
	case "-version", "--version":
		fmt.Fprint(p.Stdout, a.version())
		return 0
	}
	cmd, ok := a.Commands[args[0]]
	if !ok {
		fmt.Fprintf(p.Stderr, "outboxctl: unknown command %q\n\n", args[0])
		a.usage(p.Stderr)
		return 2
	}
	getenv := p.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	newLogger := a.NewLogger
	if newLogger == nil {
		newLogger = NewLogger
	}
	logger, err := newLogger(p.Stderr, getenv)
	if err != nil {
		fmt.Fprintf(p.Stderr, "outboxctl: %v\n", err)
		return 2
	}
	fps, err := failpoints.Parse(getenv(failpoints.EnvVar))
	if err != nil {
		fmt.Fprintf(p.Stderr, "outboxctl: %s: %v\n", failpoints.EnvVar, err)
		return 2
	}
	env := &Env{
		Stdout:      p.Stdout,
		Stderr:      p.Stderr,
		Logger:      logger,
		DatabaseURL: DatabaseURL(getenv),
		Stdin:       p.Stdin,
		Interactive: p.Interactive,
		Actor:       actor(getenv("USER"), p.Hostname),
		Failpoints:  fps,
		Getenv:      getenv,
		app:         a,
	}
	if err := cmd.Run(ctx, env, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if errors.Is(err, ErrUsage) {
			return 2
		}
		fmt.Fprintf(p.Stderr, "outboxctl %s: %v\n", args[0], err)
		var c *ConfigError
		if errors.As(err, &c) {
			return 2
		}
		return 1
	}
	return 0
}

func (a *App) version() string {
	if a.Version != nil {
		return a.Version()
	}
	return Version()
}

func (a *App) usage(w io.Writer) {
	fmt.Fprintln(w, "usage: outboxctl <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(a.Commands))
	for n := range a.Commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-15s %s\n", n, a.Commands[n].Summary)
	}
	fmt.Fprintln(w, "\n`outboxctl help COMMAND` (or `outboxctl COMMAND -h`) shows a command's flags;")
	fmt.Fprintln(w, "`outboxctl --version` the module version and VCS revision.")
	fmt.Fprintln(w, "\nenvironment:")
	if a.Environment != nil {
		a.Environment(w)
	} else {
		PrintVars(w, Vars())
	}
	if a.Notes != "" {
		fmt.Fprintln(w, a.Notes)
	}
	fmt.Fprintln(w, "\nCommands that change data print their plan, then act with --yes, ask at a terminal, and otherwise")
	fmt.Fprintln(w, "are a dry run that changes nothing (exit 0). TIME is RFC 3339 or a duration before now (2h).")
	fmt.Fprintln(w, "\nexit status: 0 success, 1 the command failed, 2 usage (unknown command, bad flag or argument, malformed setting).")
}

// runHelp lists the commands, or shows one command's usage.
func runHelp(ctx context.Context, env *Env, args []string) error {
	a := env.app
	if a == nil {
		a = &App{Commands: Commands()}
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		a.usage(env.Stdout)
		return nil
	}
	cmd, ok := a.Commands[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "outboxctl help: unknown command %q\n\n", args[0])
		a.usage(env.Stderr)
		return ErrUsage
	}
	help := *env
	help.Stderr = env.Stdout
	return cmd.Run(ctx, &help, []string{"-h"})
}

// runVersion prints what --version prints.
func runVersion(ctx context.Context, env *Env, args []string) error {
	fs := NewFlagSet(env, "version", "version")
	pos, err := Parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return Usagef(fs, "version takes no arguments, got %q", pos)
	}
	a := env.app
	if a == nil {
		a = &App{}
	}
	fmt.Fprint(env.Stdout, a.version())
	return nil
}

// actor is who runs the command, as recorded with skips and logged with
// every write: $USER@hostname.
func actor(user, host string) string {
	if user == "" {
		user = "unknown"
	}
	if host == "" {
		host = "unknown-host"
	}
	return user + "@" + host
}
