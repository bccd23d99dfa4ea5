package testsuite

import (
	"os"
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/testdb"
)

func TestMain(m *testing.M) {
	code := m.Run()
	CloseSharedEnv()
	testdb.StopLogical()
	RemoveBuilt()
	os.Exit(code)
}
