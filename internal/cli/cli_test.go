package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var testCommand = Command{
	Name:    "thing",
	Summary: "does a thing.",
	Env: []Var{
		{Name: "THING_ADDR", Default: "127.0.0.1:1", Meaning: "where it listens"},
		{Name: "THING_TOKEN", Meaning: "who may call it"},
	},
	Notes: "See the docs.",
}

// parse runs testCommand's Parse on args with one flag of its own.
func parse(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	fs := flag.NewFlagSet("thing", flag.ContinueOnError)
	fs.String("addr", "", "listen `ADDRESS`")
	var out, errb bytes.Buffer
	err = testCommand.Parse(fs, args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestHelpListsTheEnvironmentAndFlags(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-h", "--help", "-help"} {
		stdout, stderr, err := parse(t, arg)
		require.ErrorIs(t, err, ErrHandled)
		require.Zero(t, ExitCode(err))
		require.Empty(t, stderr)
		require.Equal(t, `thing: does a thing.

usage: thing [flags]

environment:
  THING_ADDR (default 127.0.0.1:1)
    	where it listens
  THING_TOKEN
    	who may call it

flags:
  -h, --help
    	print this help and exit
  --addr ADDRESS
    	listen ADDRESS
  --version
    	print the module version and VCS revision, and exit

See the docs.
`, stdout, arg)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	stdout, _, err := parse(t, "--version")
	require.ErrorIs(t, err, ErrHandled)
	require.Regexp(t, `^thing \S+ \S+\nrevision .+\ngo go1\.`, stdout)
}

// TestVersionFromLdflags: a release build's -ldflags -X sets version, which
// --version prints in place of the build information's module version.
func TestVersionFromLdflags(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = "v0.1.0"
	require.True(t, strings.HasPrefix(Version("thing"), "thing github.com/outflow/outflow v0.1.0\n"), Version("thing"))
}

func TestBadCommandLinesExit2(t *testing.T) {
	t.Parallel()
	stdout, stderr, err := parse(t, "-bogus")
	require.Equal(t, ExitUsage, ExitCode(err))
	require.Empty(t, stdout)
	require.Contains(t, stderr, "flag provided but not defined: --bogus\nusage: thing [flags] (thing -h for help)\n")
	var errb bytes.Buffer
	require.Equal(t, ExitUsage, Report(&errb, "thing", err))
	require.Empty(t, errb.String(), "Parse has said it already")

	_, stderr, err = parse(t, "-addr", ":1", "extra")
	require.Equal(t, ExitUsage, ExitCode(err))
	require.Contains(t, stderr, `thing: no arguments expected, got ["extra"]`)

	_, stderr, err = parse(t, "-addr")
	require.Equal(t, ExitUsage, ExitCode(err))
	require.Equal(t, "flag needs an argument: --addr\nusage: thing [flags] (thing -h for help)\n", stderr)

	_, _, err = parse(t, "-addr", ":1")
	require.NoError(t, err)
}

func TestConfigErrorsArePlainLines(t *testing.T) {
	t.Parallel()
	err := Config(errors.Join(errors.New(`THING_ADDR="x": want host:port`), errors.New(`THING_TOKEN="": want a token`)))
	require.Equal(t, err, Config(err), "marked once")
	require.Nil(t, Config(nil))
	require.True(t, IsUsage(fmt.Errorf("starting: %w", err)))
	var errb bytes.Buffer
	require.Equal(t, ExitUsage, Report(&errb, "thing", err))
	require.Equal(t, `thing: THING_ADDR="x": want host:port
thing: THING_TOKEN="": want a token
thing: -h lists the environment variables and their defaults
`, errb.String())

	errb.Reset()
	logged := 0
	require.Equal(t, ExitFailure, Exit(&errb, "thing", errors.New("database down"), func(error) { logged++ }))
	require.Equal(t, 1, logged, "a failure goes to the binary's log")
	require.Empty(t, errb.String())
	require.Equal(t, ExitUsage, Exit(&errb, "thing", err, func(error) { logged++ }))
	require.Equal(t, 1, logged, "a configuration error does not")
	require.Zero(t, Exit(&errb, "thing", nil, nil))
}
