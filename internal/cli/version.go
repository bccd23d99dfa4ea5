package cli

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"strings"
)

// version is the release a build is of, set by the Makefile's builds with
// -ldflags "-X github.com/outflow/outflow/internal/cli.version=v0.1.0" (git
// describe); empty, the module version from the build information stands
// (a `go install ...@v0.1.0` has it, a build in a checkout says "(devel)").
var version string

// Version is what --version prints: the binary, its module and version,
// the VCS revision it was built from (with the commit time, and "modified"
// when the work tree had changes) and the Go version, one a line, read
// from the build information the Go toolchain embeds.
func Version(name string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return name + " " + cmp.Or(version, "(devel)") + "\nrevision unknown (no build information in this binary)\n"
	}
	return versionOf(name, bi)
}

func versionOf(name string, bi *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	var b strings.Builder
	v := cmp.Or(version, bi.Main.Version, "(devel)")
	fmt.Fprintf(&b, "%s %s %s\n", name, bi.Main.Path, v)
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
