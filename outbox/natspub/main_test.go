package natspub_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (a relay,
// a NATS connection's readers).
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}
