package outboxops_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// relay a test runs (outboxtest.RunRelay) must be gone when its test ends.
// The Example functions read DATABASE_URL as an operator's tool would: a
// scratch database of their own. The wal_level=logical server the cdc
// tests start (testdb.Logical) is stopped at the end.
func TestMain(m *testing.M) {
	drop := testdb.ScratchEnv("DATABASE_URL")
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		drop()
		testdb.StopLogical()
		os.Exit(code)
	}))
}
