package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/outflow/outflow/outbox/cmdkit"
)

// Exit statuses.
const (
	// ExitFailure: the work failed (a database error, an unknown event).
	ExitFailure = 1
	// ExitUsage: a bad flag or argument, or a malformed setting.
	ExitUsage = 2
)

// Var is one environment variable a binary reads.
type Var struct {
	// Name is the variable, e.g. DATABASE_URL, or a family such as
	// TEMPORAL_TLS_*.
	Name string
	// Default is what an unset variable means, e.g. "127.0.0.1:8080" or
	// "off"; empty when there is none to state.
	Default string
	// Meaning says in one line what it sets.
	Meaning string
}

// Command describes a binary's command line for its -h.
type Command struct {
	// Name is the binary's name, e.g. "starter".
	Name string
	// Summary says in one line what the binary does.
	Summary string
	// Usage is the synopsis after the name; defaulted to "[flags]".
	Usage string
	// Env lists the environment variables the binary reads, in the order
	// they are shown.
	Env []Var
	// Notes, when not empty, is printed after the environment: exit
	// statuses, where the documentation is.
	Notes string
}

// ErrHandled is returned by [Command.Parse] once it answered -h or
// --version: the binary exits 0 without doing anything else.
var ErrHandled = errors.New("cli: help or version printed")

// UsageError is a bad command line: exit status 2.
type UsageError struct {
	Err error
	// printed: [Command.Parse] has said so already; [Report] stays quiet.
	printed bool
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a [UsageError].
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ConfigError is a malformed setting in the environment: exit status 2.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Config marks err as a configuration error; nil stays nil.
func Config(err error) error {
	if err == nil {
		return nil
	}
	var c *ConfigError
	if errors.As(err, &c) {
		return err
	}
	return &ConfigError{Err: err}
}

// IsUsage reports whether err is a usage or configuration error, the ones
// printed as plain lines and answered with exit status 2.
func IsUsage(err error) bool {
	var u *UsageError
	var c *ConfigError
	return errors.As(err, &u) || errors.As(err, &c)
}

// ExitCode is the exit status for what run returned.
func ExitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, ErrHandled):
		return 0
	case IsUsage(err):
		return ExitUsage
	default:
		return ExitFailure
	}
}

// Report prints err on w as plain lines, each after "name: ", and returns
// the exit status for it; nothing is printed for nil or [ErrHandled]. A
// joined error (every bad setting at once) prints one line per problem.
func Report(w io.Writer, name string, err error) int {
	code := ExitCode(err)
	var u *UsageError
	if code == 0 || (errors.As(err, &u) && u.printed) {
		return code
	}
	for line := range strings.SplitSeq(strings.TrimRight(err.Error(), "\n"), "\n") {
		fmt.Fprintf(w, "%s: %s\n", name, line)
	}
	if code == ExitUsage {
		var c *ConfigError
		if errors.As(err, &c) {
			fmt.Fprintf(w, "%s: -h lists the environment variables and their defaults\n", name)
		}
	}
	return code
}

// Parse parses args with fs, after adding --version to it: -h or --help
// prints the help on stdout and --version the build on stdout, both
// returning [ErrHandled]; a bad flag or a positional argument (no binary
// takes one) returns a [UsageError] after printing it on stderr. fs must be
// made with flag.ContinueOnError; Parse sets its output and usage.
func (c *Command) Parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	version := fs.Bool("version", false, "print the module version and VCS revision, and exit")
	fs.SetOutput(stderr)
	fs.Usage = func() {} // a bad flag is reported below, briefly
	err := cmdkit.ParseFlags(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.PrintHelp(stdout, fs)
		return ErrHandled
	case err != nil:
		fmt.Fprintf(stderr, "%v\nusage: %s %s (%s -h for help)\n", err, c.Name, c.usage(), c.Name)
		return &UsageError{Err: err, printed: true}
	case *version:
		fmt.Fprint(stdout, Version(c.Name))
		return ErrHandled
	case fs.NArg() > 0:
		err := fmt.Errorf("no arguments expected, got %q", fs.Args())
		fmt.Fprintf(stderr, "%s: %v\nusage: %s %s (%s -h for help)\n", c.Name, err, c.Name, c.usage(), c.Name)
		return &UsageError{Err: err, printed: true}
	}
	return nil
}

func (c *Command) usage() string {
	if c.Usage == "" {
		return "[flags]"
	}
	return c.Usage
}

// PrintHelp writes the help: summary, synopsis, environment and flags.
func (c *Command) PrintHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "%s: %s\n\nusage: %s %s\n", c.Name, c.Summary, c.Name, c.usage())
	if len(c.Env) > 0 {
		fmt.Fprintln(w, "\nenvironment:")
		PrintVars(w, c.Env)
	}
	fmt.Fprintln(w, "\nflags:")
	fmt.Fprintln(w, "  -h, --help\n    \tprint this help and exit")
	if fs != nil {
		cmdkit.PrintFlags(w, fs)
	}
	if c.Notes != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.Notes))
	}
}

// PrintVars writes vars as flag.PrintDefaults writes flags: the name and
// its default on one line, the meaning indented below.
func PrintVars(w io.Writer, vars []Var) {
	for _, v := range vars {
		fmt.Fprintf(w, "  %s", v.Name)
		if v.Default != "" {
			fmt.Fprintf(w, " (default %s)", v.Default)
		}
		fmt.Fprintf(w, "\n    \t%s\n", v.Meaning)
	}
}

// Exit is the exit status for what a server's run returned, after saying
// why: a usage or configuration error as plain lines on w ([Report]); any
// other failure through logFailure (the binary's logger, so the failure
// sits in its log stream), or on w as well when logFailure is nil.
func Exit(w io.Writer, name string, err error, logFailure func(error)) int {
	if err == nil || errors.Is(err, ErrHandled) {
		return 0
	}
	if IsUsage(err) || logFailure == nil {
		return Report(w, name, err)
	}
	logFailure(err)
	return ExitFailure
}

// Vars joins groups of variables into one list, in order.
func Vars(groups ...[]Var) []Var {
	var out []Var
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// Duration parses v, the value of the setting name, as a Go duration: the
// one reading of a duration setting every binary shares. Zero is accepted
// only when zeroOK (a setting where 0 means "off"); negative durations
// never are. The error names the setting and says what it wants.
func Duration(name, v string, zeroOK bool) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || (d == 0 && !zeroOK) {
		want := "a positive Go duration such as 30s, 10m or 168h"
		if zeroOK {
			want += ", or 0 to turn it off"
		}
		return 0, fmt.Errorf("%s=%q: want %s", name, v, want)
	}
	return d, nil
}
