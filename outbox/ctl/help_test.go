package ctl

import (
	"maps"
	"slices"
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/ctltest"
)

// TestOneFlagStyle: every flag of the library's outboxctl is written
// --name, in its help, every command's and in the messages of a bad flag.
func TestOneFlagStyle(t *testing.T) {
	t.Parallel()
	ctltest.RequireOneFlagStyle(t, run, slices.Sorted(maps.Keys(commands)))
}
