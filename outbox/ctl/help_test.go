package ctl

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// singleDashLong is a flag longer than one letter written with one dash
// (-database-url) where a help line or a message names a flag.
var singleDashLong = regexp.MustCompile("(?m)(^|[ `\\[(\"])-[a-z][a-z0-9]+(-[a-z0-9]+)*\\b")

// TestOneFlagStyle walks outboxctl's own help, every command's -h and
// `help COMMAND`, and a bad flag of each: every flag is written --name,
// in the flag lists and in the messages.
func TestOneFlagStyle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	check := func(wantCode int, args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(ctx, args, &out, &errb)
		require.Equal(t, wantCode, code, "outboxctl %v\nstdout: %s\nstderr: %s", args, out.String(), errb.String())
		require.NotRegexp(t, singleDashLong, out.String(), "outboxctl %v", args)
		require.NotRegexp(t, singleDashLong, errb.String(), "outboxctl %v", args)
	}
	check(0, "-h")
	check(0, "help")
	check(2, "--no-such-flag")
	for name := range commands {
		check(0, name, "-h")
		check(0, name, "--help")
		check(0, "help", name)
		check(2, name, "--no-such-flag")
		if name != "help" { // help's argument is a command: it echoes it as typed
			check(2, name, "-no-such-flag")
		}
	}
	require.Regexp(t, singleDashLong, "  -database-url URL", "the check sees a single-dash flag")
}
