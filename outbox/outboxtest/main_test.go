package outboxtest_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// relay RunRelay starts must be gone when its test ends. The Example
// functions read DATABASE_URL as a service would: a scratch database of
// their own.
func TestMain(m *testing.M) {
	drop := testdb.ScratchEnv("DATABASE_URL")
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		drop()
		os.Exit(code)
	}))
}
