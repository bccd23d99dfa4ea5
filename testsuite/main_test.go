package testsuite

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	code := m.Run()
	CloseSharedEnv()
	RemoveBuilt()
	os.Exit(code)
}
