package natsconsumer_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/outflow/outflow/outbox/outboxtest/dev/proc"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	if proc.InChild() {
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}
