package cmdkit

import (
	"bytes"
	"flag"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFlagsWithTwoDashes: help and a bad flag's error write every flag
// longer than one letter with two dashes; both spellings parse.
func TestFlagsWithTwoDashes(t *testing.T) {
	t.Parallel()
	newFS := func() (*flag.FlagSet, *string) {
		fs := flag.NewFlagSet("thing", flag.ContinueOnError)
		return fs, fs.String("database-url", "", "the database")
	}
	fs, url := newFS()
	var out bytes.Buffer
	fs.SetOutput(&out)
	require.NoError(t, ParseFlags(fs, []string{"-database-url", "a"}))
	require.Equal(t, "a", *url)
	fs, url = newFS()
	require.NoError(t, ParseFlags(fs, []string{"--database-url=b"}))
	require.Equal(t, "b", *url)

	fs, _ = newFS()
	fs.SetOutput(&out)
	require.EqualError(t, ParseFlags(fs, []string{"-bogus"}), "flag provided but not defined: --bogus")
	require.ErrorIs(t, ParseFlags(fs, []string{"-h"}), flag.ErrHelp)
	require.Empty(t, out.String(), "the flag package printed nothing itself")

	PrintFlags(&out, fs)
	require.Equal(t, "  --database-url string\n    \tthe database\n", out.String())
}
