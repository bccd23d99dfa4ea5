package cmdkit

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"strings"
)

// Version is what a main module's binary prints for --version ([VersionText]
// of the build information): its module and version, which is stamped when
// not empty (the release a build's -ldflags -X set, e.g. from git
// describe), else the build information's module version (a `go install
// ...@v0.1.0` has it, a build in a checkout says "(devel)").
func Version(name, stamped string) string {
	bi, _ := debug.ReadBuildInfo()
	return mainVersion(name, stamped, bi)
}

func mainVersion(name, stamped string, bi *debug.BuildInfo) string {
	if bi == nil {
		return VersionText(name, "", cmp.Or(stamped, "(devel)"), nil)
	}
	return VersionText(name, bi.Main.Path, cmp.Or(stamped, bi.Main.Version, "(devel)"), bi)
}

// VersionText is --version's text, one item a line: the binary, its module
// (left out when empty) and version, the VCS revision bi records (with the
// commit time, and "modified" when the work tree had changes) and the Go
// version. A nil bi is a binary without build information.
func VersionText(name, module, version string, bi *debug.BuildInfo) string {
	var b strings.Builder
	b.WriteString(name)
	for _, s := range []string{module, version} {
		if s != "" {
			b.WriteString(" " + s)
		}
	}
	b.WriteString("\n")
	if bi == nil {
		b.WriteString("revision unknown (no build information in this binary)\n")
		return b.String()
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
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
