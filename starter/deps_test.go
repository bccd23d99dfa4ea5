package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRelayLinksNoApplication: the relay is a library plus its wiring; it
// must not link the workflows, their activities, the payment provider's
// client or the SDK's worker (it only starts workflows). The contract it
// shares with the workflows lives in package handoff.
func TestRelayLinksNoApplication(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, string(out))
	var bad []string
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case strings.Contains(pkg, "stripe"),
			pkg == "go.temporal.io/sdk/worker",
			pkg == "github.com/outflow/outflow/workflows",
			pkg == "github.com/outflow/outflow/activities":
			bad = append(bad, pkg)
		}
	}
	require.Empty(t, bad, "the starter links packages of the application; move what it needs into package handoff or internal/routes")
}
