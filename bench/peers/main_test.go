package main

import (
	"os"
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// outflow_cdc's test runs on this process's private wal_level=logical
// server; it stops before the process exits.
func TestMain(m *testing.M) {
	consumerChild() // the crash round's kill re-runs this binary as its consumer
	code := m.Run()
	testdb.StopLogical()
	os.Exit(code)
}
