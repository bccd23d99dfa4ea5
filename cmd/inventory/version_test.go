package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestVersionFromLdflags: `make build` stamps the release with
// -ldflags "-X main.version=...", and the inventory's --version prints it
// (the inventory links only the public library, so not internal/cli's).
func TestVersionFromLdflags(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "inventory")
	out, err := exec.CommandContext(ctx, "go", "build", "-ldflags", "-X main.version=v9.8.7", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.True(t, strings.HasPrefix(string(out), "inventory github.com/outflow/outflow v9.8.7\n"), "%s", out)
}
