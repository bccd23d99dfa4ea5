package main

import (
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/ctltest"
)

// setup is a migrated database and a way to run this outboxctl on it.
func setup(t *testing.T) *ctltest.Bundle {
	t.Helper()
	return ctltest.New(t, run)
}
