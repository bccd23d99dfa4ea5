package ctl

import (
	"cmp"
	"runtime/debug"

	"github.com/outflow/outflow/outbox/cmdkit"
)

// ModulePath is the library's module, whose version the library's
// outboxctl reports.
const ModulePath = "github.com/outflow/outflow/outbox"

// ReleaseVersion is the library's release this source is of: what
// --version says when the build information has no module version (a
// build in a checkout, go run).
const ReleaseVersion = "v0.1.0"

// unversioned is the version a module required through a replace directive
// is built at (a build of the library's binary from outflow's root module).
const unversioned = "v0.0.0-00010101000000-000000000000"

// Version is what the library's `outboxctl --version` prints: the
// binary, its module and version (the build information's, as `go install
// github.com/outflow/outflow/outbox/cmd/outboxctl@v0.1.0` stamps it, or
// [ReleaseVersion] for a build from a checkout), the VCS revision where
// the build recorded one, and the Go version.
func Version() string { return BinaryVersion("outboxctl") }

// BinaryVersion is [Version] for the library's binary name (outboxctl,
// starter).
func BinaryVersion(name string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return cmdkit.VersionText(name, ModulePath, ReleaseVersion, nil)
	}
	return versionOf(name, bi)
}

func versionOf(name string, bi *debug.BuildInfo) string {
	v := ReleaseVersion
	switch bi.Main.Version {
	case "", "(devel)", unversioned:
	default:
		if bi.Main.Path == ModulePath {
			v = bi.Main.Version
		}
	}
	return cmdkit.VersionText(name, cmp.Or(bi.Main.Path, ModulePath), v, bi)
}
