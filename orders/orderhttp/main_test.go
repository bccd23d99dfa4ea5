package orderhttp

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (a pool,
// a server or a request that outlived its test).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
