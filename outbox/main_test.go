package outbox_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every relay goroutine (loop, publishers, listener, gauges) must be gone
// when Run returns and the test's pool is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
