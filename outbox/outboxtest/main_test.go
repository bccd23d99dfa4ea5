package outboxtest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// relay RunRelay starts must be gone when its test ends.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
