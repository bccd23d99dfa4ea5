package temporalpub_test

import (
	"os"
	"testing"

	"github.com/outflow/outflow/outbox/outboxtest/dev/devserver"
)

// temporal is the dev server this package's tests share; each test uses its
// own task queue, its own database and fresh event IDs.
var temporal *devserver.Server

// forgetAckInterval lets a test delete a workflow it just closed, as the
// namespace retention does (forget): Temporal deletes a closed run only
// once its close is acknowledged, which it records every 30 s by default.
var forgetAckInterval = map[string]string{"history.transferProcessorUpdateAckInterval": `"1s"`}

func TestMain(m *testing.M) {
	os.Exit(devserver.RunTests(m, devserver.Options{DynamicConfig: forgetAckInterval}, &temporal))
}
