package ctl

import (
	"os"
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestMain stops the wal_level=logical server the cdc tests start
// (testdb.Logical) once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	testdb.StopLogical()
	os.Exit(code)
}
