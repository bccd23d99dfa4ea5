package ctl

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"strings"
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
		return name + " " + ModulePath + " " + ReleaseVersion + "\nrevision unknown (no build information in this binary)\n"
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
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s\n", name, cmp.Or(bi.Main.Path, ModulePath), v)
	if rev := settings["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, "revision %s", rev)
		if t := settings["vcs.time"]; t != "" {
			fmt.Fprintf(&b, " %s", t)
		}
		if settings["vcs.modified"] == "true" {
			b.WriteString(" modified")
		}
		b.WriteString("\n")
	} else {
		b.WriteString("revision unknown (built without VCS stamping: go run, go test, or go build -buildvcs=false)\n")
	}
	fmt.Fprintf(&b, "go %s\n", bi.GoVersion)
	return b.String()
}
