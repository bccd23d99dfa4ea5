package cmdkit

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	require.Regexp(t, `^thing \S+ \S+\nrevision .+\ngo go1\.`, Version("thing", ""))

	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/outflow/outflow", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	require.Equal(t, "thing github.com/outflow/outflow v1.2.3\nrevision 0123456789abcdef0123456789abcdef01234567 2026-12-01T10:00:00Z modified\ngo go1.26.0\n", mainVersion("thing", "", bi))
	bi = &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/outflow/outflow"}}
	require.Contains(t, mainVersion("thing", "", bi), "thing github.com/outflow/outflow (devel)\nrevision unknown (built without VCS stamping")
	require.Equal(t, "thing (devel)\nrevision unknown (no build information in this binary)\n", mainVersion("thing", "", nil))
}

// TestVersionStamped: a release build's -ldflags -X stamps the version,
// which --version prints in place of the build information's module
// version.
func TestVersionStamped(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/outflow/outflow", Version: "(devel)"}}
	require.Equal(t, "thing github.com/outflow/outflow v0.1.0\nrevision unknown (built without VCS stamping: go run, go test, or go build -buildvcs=false)\ngo go1.26.0\n", mainVersion("thing", "v0.1.0", bi))
	require.Equal(t, "thing v0.1.0\nrevision unknown (no build information in this binary)\n", mainVersion("thing", "v0.1.0", nil))
}
