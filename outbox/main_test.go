package outbox_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

// Every relay goroutine (loop, publishers, listener, gauges, stream) must be
// gone when Run returns and the test's pool is closed. The CDC tests' private
// wal_level=logical server stops before the process exits. The Example
// functions read DATABASE_URL as a service would: a scratch database of
// their own.
func TestMain(m *testing.M) {
	drop := testdb.ScratchEnv("DATABASE_URL")
	code := m.Run()
	drop()
	testdb.StopLogical()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
