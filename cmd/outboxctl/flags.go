package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outflow/outflow/internal/database"
)

// newFlagSet returns a subcommand's flag set: errors and usage go to stderr,
// and --database-url mirrors DATABASE_URL (its password masked wherever
// it is shown).
func newFlagSet(env *cliEnv, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Var(urlValue{&env.databaseURL}, "database-url", "PostgreSQL `URL`, pgx/v5 syntax; overrides DATABASE_URL")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: outboxctl %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
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
	return database.Redact(*v.url)
}

func (v urlValue) Set(s string) error {
	*v.url = s
	return nil
}

// parse parses flags that may come before, between or after the positional
// arguments (`skip EVENT_ID --reason TEXT`), and returns the positionals. A
// bad flag is a usage error (flag has printed it); -h prints the command's
// usage on stdout and is flag.ErrHelp.
func parse(env *cliEnv, fs *flag.FlagSet, args []string) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {} // printed below, where it belongs
	defer func() { fs.Usage = usage }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				out := fs.Output()
				fs.SetOutput(env.stdout)
				usage()
				fs.SetOutput(out)
				return nil, err
			}
			usage() // on stderr, after flag's message
			return nil, errUsage
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// usagef prints a usage error with the command's usage and returns errUsage
// (exit status 2).
func usagef(fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), "outboxctl %s: %s\n\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return errUsage
}

// eventIDArg parses the single EVENT_ID argument.
func eventIDArg(fs *flag.FlagSet, pos []string) (uuid.UUID, error) {
	if len(pos) != 1 {
		return uuid.Nil, usagef(fs, "want exactly one EVENT_ID, got %d arguments (find event ids with `outboxctl list --quarantined`)", len(pos))
	}
	id, err := uuid.Parse(pos[0])
	if err != nil {
		return uuid.Nil, usagef(fs, "EVENT_ID %q is not a UUID (event ids look like 01912d4e-7c1a-7b3e-9f00-5e2a8c4d1b2f; find them with `outboxctl list`)", pos[0])
	}
	return id, nil
}

// openDB opens the database and refuses an outdated outbox schema (and an
// outdated order app schema where the database has one), naming
// `outboxctl migrate`: the commands also run on a service's own database
// without the order app, where those of the order app say what is missing.
func openDB(ctx context.Context, env *cliEnv) (*pgxpool.Pool, error) {
	return database.OpenCheckedOutbox(ctx, env.databaseURL)
}

// auditArgs checks the audit flags of a command that destroys something:
// --reason is mandatory (why says what to write, with an example) and
// --actor may not be blanked.
func auditArgs(fs *flag.FlagSet, reason, actor, why string) error {
	if strings.TrimSpace(reason) == "" {
		return usagef(fs, "--reason is mandatory: %s", why)
	}
	if strings.TrimSpace(actor) == "" {
		return usagef(fs, "--actor may not be empty")
	}
	return nil
}

// timeArg parses the RFC 3339 time of flag name; a malformed one is a usage
// error that shows how to write it.
func timeArg(fs *flag.FlagSet, name, value string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		return time.Time{}, usagef(fs, "%s %q is not an RFC 3339 time; write it like 2025-06-01T10:00:00Z or 2025-06-01T12:00:00+02:00", name, value)
	}
	return t, nil
}

// errNobodyToConfirm is [confirmed]'s answer when --yes was not given and
// stdin is not a terminal.
var errNobodyToConfirm = errors.New("stdin is not a terminal, so there is nobody to confirm")

// confirmed decides whether a command that changes many events at once goes
// ahead, once it has printed what it would do: with --yes (yes) it does;
// otherwise the operator at the terminal is asked question. Without a
// terminal it returns errNobodyToConfirm, and the command says what --yes
// would do (replay refuses, a bulk retry ends as a dry run).
func confirmed(env *cliEnv, yes bool, question string) (bool, error) {
	if yes {
		return true, nil
	}
	if !env.interactive {
		return false, errNobodyToConfirm
	}
	return confirm(env, question)
}

// confirm asks question on stderr and reads a yes or no from stdin.
func confirm(env *cliEnv, question string) (bool, error) {
	fmt.Fprint(env.stderr, question)
	line, err := bufio.NewReader(env.stdin).ReadString('\n')
	if err != nil && line == "" {
		return false, fmt.Errorf("reading the confirmation: %w", err)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
