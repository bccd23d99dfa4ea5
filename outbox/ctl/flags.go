package ctl

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/outbox/cmdkit"
)

// NewFlagSet returns a subcommand's flag set: errors and usage go to stderr,
// and --database-url mirrors DATABASE_URL (its password masked wherever
// it is shown).
func NewFlagSet(env *Env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Var(urlValue{&env.DatabaseURL}, "database-url", "PostgreSQL `URL`, pgx/v5 syntax; overrides DATABASE_URL")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: outboxctl %s\n\nflags:\n", synopsis)
		cmdkit.PrintFlags(fs.Output(), fs)
		fmt.Fprintln(fs.Output(), "\n`outboxctl -h` lists the environment variables.")
	}
	return fs
}

// urlValue is the --database-url flag: its default, shown by -h, is
// DATABASE_URL with the password masked.
type urlValue struct{ url *string }

func (v urlValue) String() string {
	if v.url == nil {
		return ""
	}
	return cmdkit.Redact(*v.url)
}

func (v urlValue) Set(s string) error {
	*v.url = s
	return nil
}

// Parse parses flags that may come before, between or after the positional
// arguments (`skip EVENT_ID --reason TEXT`), and returns the positionals. A
// bad flag is a usage error, printed with the usage; -h prints the command's
// usage on stdout and is flag.ErrHelp; any other usage error is [ErrUsage].
func Parse(env *Env, fs *flag.FlagSet, args []string) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {} // printed below, where it belongs
	defer func() { fs.Usage = usage }()
	var pos []string
	for {
		if err := cmdkit.ParseFlags(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				out := fs.Output()
				fs.SetOutput(env.Stdout)
				usage()
				fs.SetOutput(out)
				return nil, err
			}
			fmt.Fprintf(fs.Output(), "outboxctl %s: %v\n", fs.Name(), err)
			usage() // on stderr, after the error
			return nil, ErrUsage
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// usagef prints a usage error with the command's usage and returns ErrUsage
// (exit status 2).
func Usagef(fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), "outboxctl %s: %s\n\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return ErrUsage
}

// eventIDArg parses the single EVENT_ID argument.
func eventIDArg(fs *flag.FlagSet, pos []string) (uuid.UUID, error) {
	if len(pos) != 1 {
		return uuid.Nil, Usagef(fs, "want exactly one EVENT_ID, got %d arguments (find event ids with `outboxctl list --quarantined`)", len(pos))
	}
	id, err := uuid.Parse(pos[0])
	if err != nil {
		return uuid.Nil, Usagef(fs, "EVENT_ID %q is not a UUID (event ids look like 01912d4e-7c1a-7b3e-9f00-5e2a8c4d1b2f; find them with `outboxctl list`)", pos[0])
	}
	return id, nil
}

// OpenDB opens env's database and refuses an outdated schema, naming
// `outboxctl migrate`: the outbox's, and whatever else [App.OpenDB] checks
// (the order app's tables, in the root's binary).
func OpenDB(ctx context.Context, env *Env) (*pgxpool.Pool, error) {
	if env.app != nil && env.app.OpenDB != nil {
		return env.app.OpenDB(ctx, env.DatabaseURL)
	}
	return OpenOutbox(ctx, env.DatabaseURL)
}

// AuditArgs checks the audit flags of a command that destroys something:
// --reason is mandatory (why says what to write, with an example) and
// --actor may not be blanked.
func AuditArgs(fs *flag.FlagSet, reason, actor, why string) error {
	if strings.TrimSpace(reason) == "" {
		return Usagef(fs, "--reason is mandatory: %s", why)
	}
	if strings.TrimSpace(actor) == "" {
		return Usagef(fs, "--actor may not be empty")
	}
	return nil
}

// timeForms says how a TIME flag is written, for -h and for the error.
const timeForms = "an RFC 3339 time such as 2025-06-01T10:00:00Z or 2025-06-01T12:00:00+02:00, or a Go duration meaning that long before now such as 2h or 30m"

// timeArg parses the TIME of flag name: an RFC 3339 time, or a Go duration
// meaning that long before now. A malformed one is a usage error that shows
// both forms.
func timeArg(fs *flag.FlagSet, name, value string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, value); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(value); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, Usagef(fs, "%s %q: want %s", name, value, timeForms)
}

// YesFlag adds --yes to a command that changes data (see [Proceed]).
func YesFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("yes", false, "act without asking; without --yes a terminal is asked, and without a terminal the command only prints its plan and changes nothing (a dry run, exit status 0)")
}

// Change is what a command that changes data would do, for [Proceed].
type Change struct {
	// Question is asked at a terminal, e.g. "Retry 2 events? [y/N] ".
	Question string
	// Done is what nothing was when the command does not act, e.g.
	// "retried".
	Done string
	// Todo is what --yes would do, e.g. "retry these 2 events".
	Todo string
}

// Proceed is the one rule of every command that changes data (retry, skip,
// replay, cleanup, source set, forget-customer), asked once the command
// has printed its plan: with --yes (yes) it acts; at a terminal it asks;
// with neither it is a dry run: it says that nothing was changed and what
// --yes would do, and the command ends with exit status 0. An operator's
// "no" at the terminal is an error (exit status 1) that says nothing was
// done. migrate is not such a command: it only adds what the binaries
// need, and scripts run it.
func Proceed(env *Env, yes bool, c Change) (bool, error) {
	if yes {
		return true, nil
	}
	if !env.Interactive {
		fmt.Fprintf(env.Stdout, "dry run (stdin is not a terminal, so there is nobody to confirm): nothing was %s; pass --yes to %s\n", c.Done, c.Todo)
		return false, nil
	}
	ok, err := confirm(env, c.Question)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fmt.Errorf("not confirmed; nothing was %s", c.Done)
	}
	return true, nil
}

// rehearse runs do in a transaction it rolls back: a command that changes
// one event shows as its plan the change itself, refusals included, and
// leaves the database as it was.
func rehearse(ctx context.Context, pool *pgxpool.Pool, do func(tx pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	return do(tx)
}

// confirm asks question on stderr and reads a yes or no from stdin.
func confirm(env *Env, question string) (bool, error) {
	fmt.Fprint(env.Stderr, question)
	line, err := bufio.NewReader(env.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return false, fmt.Errorf("reading the confirmation: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
