package temporalpub_test

import (
	"os"
	"testing"

	"github.com/outflow/outflow/internal/dev/devserver"
)

// temporal is the dev server this package's tests share; each test uses its
// own task queue, its own database and fresh event IDs.
var temporal *devserver.Server

func TestMain(m *testing.M) { os.Exit(devserver.RunTests(m, devserver.Options{}, &temporal)) }
