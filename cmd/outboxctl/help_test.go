package main

import (
	"maps"
	"slices"
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/ctltest"
)

// TestOneFlagStyle: every flag is written --name, the order app's commands'
// too, in the help, every command's and in the messages of a bad flag.
func TestOneFlagStyle(t *testing.T) {
	t.Parallel()
	ctltest.RequireOneFlagStyle(t, run, slices.Sorted(maps.Keys(commands)))
}
